import type { SqlClient } from '../../../sdk/index.js';
import { SqlTables, UpstreamServerTable, type Page, type Paged, type UpstreamServerRow } from '../../../sdk/admin/index.js';

/** Rows as stored (tables in `migrations.ts`). JSON columns are TEXT; times are epoch ms. */
export interface McpServerRow extends UpstreamServerRow {
  /** JSON: `{ client_id, scopes, registered }` of an OAuth server. */
  oauth: string | null;
  /** JSON array of tool names; null: all. */
  allowed_tools: string | null;
  /** JSON: `{ input_guardrails?, output_guardrails? }`. */
  guardrails: string | null;
}
export interface McpConnectionRow {
  id: string;
  mcp_server_id: string;
  workspace_id: string;
  /** `user:<id>` or `key:<id>`. */
  subject: string;
  user_id: string | null;
  api_key_id: string | null;
  /** Sealed JSON token set. */
  tokens: string | null;
  token_expires_at: number | null;
  token_scope: string | null;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
  /** Sessions open on it (list queries only). */
  active_sessions?: number;
}
export interface McpSessionRow {
  /** SHA-256 of the session id. */
  id: string;
  connection_id: string;
  mcp_server_id: string;
  api_key_id: string;
  /** Sealed. */
  upstream_session: string | null;
  /** The client's envelope as JSON when the upstream speaks only 2026-07-28 (migration 2). */
  client_envelope?: string | null;
  created_at: number;
  last_used_at: number;
}

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'archived_at', 'request_timeout_ms', 'token_expires_at', 'last_used_at', 'active_sessions']);

/** Every statement on the MCP tables, against either SQL store; values always go as parameters. */
export class McpRepository {
  readonly tables: SqlTables;
  readonly servers: UpstreamServerTable<McpServerRow>;

  constructor(db: () => SqlClient) {
    this.tables = new SqlTables(db, NUMERIC);
    this.servers = new UpstreamServerTable<McpServerRow>(this.tables, 'cp_mcp_servers', 'MCP server');
  }

  connection(serverId: string, subject: string): Promise<McpConnectionRow | undefined> {
    return this.tables.get<McpConnectionRow>('SELECT * FROM cp_mcp_connections WHERE mcp_server_id = ? AND subject = ?', [serverId, subject]);
  }

  connectionById(id: string): Promise<McpConnectionRow | undefined> {
    return this.tables.get<McpConnectionRow>('SELECT * FROM cp_mcp_connections WHERE id = ?', [id]);
  }

  /** A server's connections, oldest first, with how many sessions each has open; `subject` narrows to one. */
  connections(serverId: string, subject: string | null, page: Page): Promise<Paged<McpConnectionRow>> {
    const params: unknown[] = [serverId];
    let from = 'FROM cp_mcp_connections c WHERE c.mcp_server_id = ?';
    if (subject !== null) {
      from += ' AND c.subject = ?';
      params.push(subject);
    }
    return this.tables.paged<McpConnectionRow>(from, params, 'c.created_at, c.id', page, 'c.*, (SELECT COUNT(*) FROM cp_mcp_sessions s WHERE s.connection_id = c.id) AS active_sessions');
  }

  insertConnection(row: McpConnectionRow): Promise<void> {
    return this.tables.insert('cp_mcp_connections', { ...row });
  }

  updateConnection(id: string, patch: Record<string, unknown>): Promise<number> {
    return this.tables.update('cp_mcp_connections', { id }, patch);
  }

  /** Forgets a connection: its sessions and its tokens, in one transaction. */
  async deleteConnection(id: string): Promise<void> {
    await this.tables.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_mcp_sessions WHERE connection_id = ?', [id]);
      await tx.run('DELETE FROM cp_mcp_connections WHERE id = ?', [id]);
    });
  }

  session(idHash: string): Promise<McpSessionRow | undefined> {
    return this.tables.get<McpSessionRow>('SELECT * FROM cp_mcp_sessions WHERE id = ?', [idHash]);
  }

  sessionsOf(connectionId: string): Promise<McpSessionRow[]> {
    return this.tables.all<McpSessionRow>('SELECT * FROM cp_mcp_sessions WHERE connection_id = ?', [connectionId]);
  }

  insertSession(row: McpSessionRow): Promise<void> {
    return this.tables.insert('cp_mcp_sessions', { ...row });
  }

  updateSession(idHash: string, patch: Record<string, unknown>): Promise<number> {
    return this.tables.update('cp_mcp_sessions', { id: idHash }, patch);
  }

  /** Which of these session digests still have a row. */
  async liveSessions(idHashes: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < idHashes.length; i += 500) {
      const chunk = idHashes.slice(i, i + 500);
      const rows = await this.tables.db().all<{ id: string }>(`SELECT id FROM cp_mcp_sessions WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk);
      for (const r of rows) out.add(r.id);
    }
    return out;
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.tables.db().run('DELETE FROM cp_mcp_sessions WHERE id = ?', [idHash]);
  }

  async deleteIdleSessions(before: number): Promise<number> {
    return (await this.tables.db().run('DELETE FROM cp_mcp_sessions WHERE last_used_at < ?', [before])).changes;
  }
}
