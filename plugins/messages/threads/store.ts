import type { SqlClient } from '../../../sdk/index.js';

type Json = Record<string, unknown>;

/** What a thread keeps from the request that created it: what a continue leaves out (`system`, `tools`). */
export interface ThreadFixed {
  system?: unknown;
  tools?: unknown;
}

/** One answered turn, as stored. */
export interface ThreadTurn {
  workspaceId: string;
  /** The answer's message id: what the next turn names as `previous_message_id`. */
  id: string;
  /** The id of the thread's first turn. */
  threadId: string;
  previousId: string | null;
  /** Epoch ms. */
  createdAt: number;
  /** The provider that answered. */
  provider: string | null;
  /** True when Anthropic's own API answered with the client's `thread` passed on, so it holds the thread too. */
  native: boolean;
  /** With `native`: which Anthropic account holds it (a digest of the target's host and credentials); a continue goes up as sent only to that one. */
  upstream: string | null;
  model: string | null;
  /** Set on the turn that created the thread (and on a turn that changed them). */
  fixed: ThreadFixed | null;
  /** This turn's messages as the client sent them (all of the history on the first turn, the new ones after). */
  inputMessages: Json[];
  /** The assistant's content blocks. */
  output: Json[];
}

interface Row {
  id: string;
  thread_id: string;
  previous_id: string | null;
  created_at: number | string;
  provider: string | null;
  native: number | string;
  upstream: string | null;
  model: string | null;
  fixed: string | null;
  input_messages: string;
  output: string;
  depth?: number | string;
}

/** Longest chain followed back from a `previous_message_id`, in turns. */
export const MAX_THREAD_TURNS = 1000;

/** The threads table (migrations.ts); every query is scoped to one workspace. */
export class ThreadRepository {
  constructor(private readonly client: SqlClient) {}

  /** Stores a turn; a second write of the same id (a cache hit replaying an answer) keeps the first. */
  async insert(t: ThreadTurn): Promise<void> {
    await this.client.run(
      `INSERT INTO gateway_message_threads (workspace_id, id, thread_id, previous_id, created_at, provider, native, upstream, model, fixed, input_messages, output)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, id) DO NOTHING`,
      [t.workspaceId, t.id, t.threadId, t.previousId, t.createdAt, t.provider, t.native ? 1 : 0, t.upstream, t.model, t.fixed === null ? null : JSON.stringify(t.fixed), JSON.stringify(t.inputMessages), JSON.stringify(t.output)],
    );
  }

  /**
   * The turns that end with `id`, oldest first (one recursive query, at most {@link MAX_THREAD_TURNS}), when its
   * thread is alive (some turn of it was stored at or after `aliveSince`, epoch ms) and whole (back to the turn that
   * created it). Empty when `id` is unknown to the workspace, its thread expired, or the chain is not whole.
   */
  async chain(workspaceId: string, id: string, aliveSince: number): Promise<ThreadTurn[]> {
    const rows = await this.client.all<Row>(
      `WITH RECURSIVE chain (id, thread_id, previous_id, created_at, provider, native, upstream, model, fixed, input_messages, output, depth) AS (
         SELECT id, thread_id, previous_id, created_at, provider, native, upstream, model, fixed, input_messages, output, 0
           FROM gateway_message_threads WHERE workspace_id = ? AND id = ?
         UNION ALL
         SELECT t.id, t.thread_id, t.previous_id, t.created_at, t.provider, t.native, t.upstream, t.model, t.fixed, t.input_messages, t.output, c.depth + 1
           FROM gateway_message_threads t JOIN chain c ON t.id = c.previous_id
          WHERE t.workspace_id = ? AND c.depth < ?
       )
       SELECT * FROM chain
        WHERE EXISTS (SELECT 1 FROM gateway_message_threads a WHERE a.workspace_id = ? AND a.thread_id = chain.thread_id AND a.created_at >= ?)
        ORDER BY depth DESC`,
      [workspaceId, id, workspaceId, MAX_THREAD_TURNS - 1, workspaceId, aliveSince],
    );
    // Only a whole thread: the oldest turn found must be the one that created it. A turn deleted from the middle
    // (expired while the next was being answered), or a chain longer than the bound, is no thread at all: a partial
    // history sent on would be a different conversation.
    if (rows.length === 0 || rows[0]!.previous_id !== null) return [];
    return rows.map((row) => ({
      workspaceId,
      id: row.id,
      threadId: row.thread_id,
      previousId: row.previous_id,
      createdAt: Number(row.created_at),
      provider: row.provider,
      native: Number(row.native) === 1,
      upstream: row.upstream,
      model: row.model,
      fixed: row.fixed === null ? null : (JSON.parse(row.fixed) as ThreadFixed),
      inputMessages: JSON.parse(row.input_messages) as Json[],
      output: JSON.parse(row.output) as Json[],
    }));
  }

  /** Deletes every thread none of whose turns was stored at or after `aliveSince` (epoch ms); returns turns deleted. */
  async deleteExpired(aliveSince: number): Promise<number> {
    const { changes } = await this.client.run(
      `DELETE FROM gateway_message_threads WHERE created_at < ? AND NOT EXISTS (
         SELECT 1 FROM gateway_message_threads a
          WHERE a.workspace_id = gateway_message_threads.workspace_id AND a.thread_id = gateway_message_threads.thread_id AND a.created_at >= ?)`,
      [aliveSince, aliveSince],
    );
    return changes;
  }
}
