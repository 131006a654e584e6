import type { SqlClient } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/** One stored response, as written. */
export interface StoredResponse {
  workspaceId: string;
  id: string;
  /** Epoch ms. */
  createdAt: number;
  status: string;
  model: string | null;
  /** The provider that answered. */
  provider: string | null;
  /** True when the provider's own Responses API answered (so it may hold the response too). */
  native: boolean;
  previousResponseId: string | null;
  /** This turn's input items, with ids. */
  inputItems: Json[];
  /** The response object as the client got it. */
  response: Json;
}

/** One turn of a conversation, oldest first: what went in and what came out. */
export interface Turn {
  id: string;
  provider: string | null;
  native: boolean;
  inputItems: Json[];
  output: Json[];
}

interface Row {
  workspace_id: string;
  id: string;
  created_at: number | string;
  status: string;
  model: string | null;
  provider: string | null;
  native: number | string;
  previous_response_id: string | null;
  input_items: string;
  response: string;
}

/** Longest conversation followed back from a `previous_response_id`, in turns. */
export const MAX_TURNS = 1000;

const parse = (text: string): unknown => JSON.parse(text);

/** The stored responses table (see migrations.ts); every query is scoped to one workspace. */
export class ResponseRepository {
  constructor(private readonly client: SqlClient) {}

  /** Stores a response; a second write of the same id (a cache hit replaying it) keeps the first. */
  async insert(r: StoredResponse): Promise<void> {
    await this.client.run(
      `INSERT INTO gateway_responses (workspace_id, id, created_at, status, model, provider, native, previous_response_id, input_items, response)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (workspace_id, id) DO NOTHING`,
      [r.workspaceId, r.id, r.createdAt, r.status, r.model, r.provider, r.native ? 1 : 0, r.previousResponseId, JSON.stringify(r.inputItems), JSON.stringify(r.response)],
    );
  }

  async get(workspaceId: string, id: string): Promise<StoredResponse | null> {
    const row = await this.client.get<Row>('SELECT * FROM gateway_responses WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return row === undefined ? null : fromRow(row);
  }

  /** Deletes a response; false when there was none. */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    const { changes } = await this.client.run('DELETE FROM gateway_responses WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return changes > 0;
  }

  /**
   * The conversation that ends with response `id`, oldest turn first, by
   * following `previous_response_id` (one recursive query, at most
   * {@link MAX_TURNS} turns). Empty when `id` is not stored. A turn deleted
   * in the middle ends the chain there (the turns before it are not reachable).
   */
  async conversation(workspaceId: string, id: string): Promise<Turn[]> {
    const rows = await this.client.all<Row & { depth: number | string }>(
      `WITH RECURSIVE chain (id, previous_response_id, provider, native, input_items, response, depth) AS (
         SELECT id, previous_response_id, provider, native, input_items, response, 0 FROM gateway_responses WHERE workspace_id = ? AND id = ?
         UNION ALL
         SELECT r.id, r.previous_response_id, r.provider, r.native, r.input_items, r.response, c.depth + 1
           FROM gateway_responses r JOIN chain c ON r.id = c.previous_response_id
          WHERE r.workspace_id = ? AND c.depth < ?
       )
       SELECT id, provider, native, input_items, response, depth FROM chain ORDER BY depth DESC`,
      [workspaceId, id, workspaceId, MAX_TURNS - 1],
    );
    return rows.map((row) => {
      const response = parse(row.response) as Json;
      return {
        id: row.id,
        provider: row.provider,
        native: Number(row.native) === 1,
        inputItems: parse(row.input_items) as Json[],
        output: Array.isArray(response.output) ? (response.output as Json[]) : [],
      };
    });
  }

  /** Deletes responses created before `before` (epoch ms); returns how many. */
  async deleteBefore(before: number): Promise<number> {
    const { changes } = await this.client.run('DELETE FROM gateway_responses WHERE created_at < ?', [before]);
    return changes;
  }
}

function fromRow(row: Row): StoredResponse {
  return {
    workspaceId: row.workspace_id,
    id: row.id,
    createdAt: Number(row.created_at),
    status: row.status,
    model: row.model,
    provider: row.provider,
    native: Number(row.native) === 1,
    previousResponseId: row.previous_response_id,
    inputItems: parse(row.input_items) as Json[],
    response: parse(row.response) as Json,
  };
}
