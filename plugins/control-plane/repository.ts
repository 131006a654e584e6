import type { SqlClient } from '../../sdk/index.js';
import { SqlTables, type Page, type Paged } from '../../sdk/admin/index.js';

/** Rows as stored. JSON columns are TEXT; times are epoch ms. */
export interface OrganisationRow {
  id: string;
  name: string;
  settings: string;
  created_at: number;
  updated_at: number;
}
export interface WorkspaceRow {
  id: string;
  organisation_id: string;
  slug: string;
  name: string;
  description: string | null;
  status: 'active' | 'archived';
  metadata: string | null;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  role: string;
  created_at: number;
  updated_at: number;
}
export interface MemberRow {
  workspace_id: string;
  user_id: string;
  role: string;
  created_at: number;
  updated_at: number;
  email?: string;
  name?: string | null;
}
export interface ApiKeyRow {
  id: string;
  organisation_id: string;
  workspace_id: string | null;
  user_id: string | null;
  type: string;
  name: string;
  description: string | null;
  scopes: string;
  status: string;
  key_hash: string;
  key_mask: string;
  previous_hash: string | null;
  previous_expires_at: number | null;
  rotation_policy: string | null;
  last_rotated_at: number | null;
  expires_at: number | null;
  metadata: string | null;
  created_at: number;
  updated_at: number;
}
export interface PromptRow {
  id: string;
  workspace_id: string;
  slug: string;
  name: string;
  status: 'active' | 'archived';
  latest_version: number;
  published_version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface PromptVersionRow {
  prompt_id: string;
  version: number;
  /** JSON: `template`, one of `provider` / `virtual_key` / `config`, `variables`, `description`. */
  body: string;
  /** JSON array: the partials the template includes directly. */
  partials: string;
  created_at: number;
}
export interface PartialRow {
  id: string;
  workspace_id: string;
  name: string;
  status: 'active' | 'archived';
  latest_version: number;
  published_version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface PartialVersionRow {
  partial_id: string;
  version: number;
  content: string;
  description: string | null;
  /** JSON array: the partials the content includes directly. */
  partials: string;
  created_at: number;
}

export interface McpServerRow {
  id: string;
  organisation_id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  url: string;
  /** `none`, `header` or `oauth`. */
  auth_type: string;
  auth_header: string | null;
  /** Sealed: the header's value, or the OAuth client secret. */
  auth_secret: string | null;
  auth_masked: string | null;
  /** JSON: `{ client_id, scopes, registered }` of an OAuth server. */
  oauth: string | null;
  /** JSON array of tool names; null: all. */
  allowed_tools: string | null;
  /** JSON: `{ input_guardrails?, output_guardrails? }`. */
  guardrails: string | null;
  request_timeout_ms: number | null;
  status: 'active' | 'archived';
  created_at: number;
  updated_at: number;
  archived_at: number | null;
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
  created_at: number;
  last_used_at: number;
}
export interface AgentServerRow {
  id: string;
  organisation_id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  url: string;
  auth_type: string;
  auth_header: string | null;
  auth_secret: string | null;
  auth_masked: string | null;
  request_timeout_ms: number | null;
  /** JSON: the last valid card fetched. */
  agent_card: string | null;
  agent_card_fetched_at: number | null;
  status: 'active' | 'archived';
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}

export type { Page, Paged } from '../../sdk/admin/index.js';

/** The resources kept in versions, and the column of each that counts them (see `nextVersion`). */
const VERSION_COUNTERS = Object.freeze({ cp_prompts: 'latest_version', cp_prompt_partials: 'latest_version' });

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set([
  'created_at', 'updated_at', 'archived_at', 'previous_expires_at', 'last_rotated_at', 'expires_at', 'version',
  'request_timeout_ms', 'token_expires_at', 'last_used_at', 'active_sessions', 'agent_card_fetched_at',
  'latest_version', 'published_version',
]);

/**
 * Every statement the control plane runs, against either SQL store. Column
 * and table names come from this file only; values always go as parameters.
 */
export class ControlPlaneRepository {
  readonly tables: SqlTables;

  constructor(readonly db: () => SqlClient) {
    this.tables = new SqlTables(db, NUMERIC);
  }

  #get<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T | undefined> {
    return this.tables.get<T>(sql, params, client);
  }

  #all<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T[]> {
    return this.tables.all<T>(sql, params, client);
  }

  #paged<T>(from: string, params: readonly unknown[], order: string, page: Page, select = '*'): Promise<Paged<T>> {
    return this.tables.paged<T>(from, params, order, page, select);
  }

  insert(table: string, row: Record<string, unknown>, client = this.db()): Promise<void> {
    return this.tables.insert(table, row, client);
  }

  update(table: string, where: Record<string, unknown>, patch: Record<string, unknown>, client = this.db()): Promise<number> {
    return this.tables.update(table, where, patch, client);
  }

  /** The next version number of a versioned resource, inside `tx` (see {@link SqlTables.nextVersion}). */
  nextVersion(table: keyof typeof VERSION_COUNTERS, id: string, now: number, tx: SqlClient): Promise<number> {
    return this.tables.nextVersion(table, VERSION_COUNTERS[table], id, now, tx);
  }

  // Organisation

  organisation(client = this.db()): Promise<OrganisationRow | undefined> {
    return this.#get<OrganisationRow>('SELECT * FROM cp_organisations ORDER BY created_at LIMIT 1', [], client);
  }

  // Workspaces

  workspace(idOrSlug: string): Promise<WorkspaceRow | undefined> {
    return this.#get<WorkspaceRow>('SELECT * FROM cp_workspaces WHERE id = ? OR slug = ?', [idOrSlug, idOrSlug]);
  }

  workspaces(statuses: readonly string[], onlyId: string | null, page: Page): Promise<Paged<WorkspaceRow>> {
    const params: unknown[] = [...statuses];
    let from = `FROM cp_workspaces WHERE status IN (${statuses.map(() => '?').join(', ')})`;
    if (onlyId !== null) {
      from += ' AND id = ?';
      params.push(onlyId);
    }
    return this.#paged<WorkspaceRow>(from, params, 'created_at, id', page);
  }

  defaultWorkspace(): Promise<WorkspaceRow | undefined> {
    return this.#get<WorkspaceRow>("SELECT * FROM cp_workspaces WHERE slug = 'default'", []);
  }

  // Users and members

  userByEmail(email: string): Promise<UserRow | undefined> {
    return this.#get<UserRow>('SELECT * FROM cp_users WHERE email = ?', [email]);
  }

  user(id: string): Promise<UserRow | undefined> {
    return this.#get<UserRow>('SELECT * FROM cp_users WHERE id = ?', [id]);
  }

  member(workspaceId: string, userId: string): Promise<MemberRow | undefined> {
    return this.#get<MemberRow>(
      'SELECT m.*, u.email, u.name FROM cp_members m JOIN cp_users u ON u.id = m.user_id WHERE m.workspace_id = ? AND m.user_id = ?',
      [workspaceId, userId],
    );
  }

  members(workspaceId: string, page: Page): Promise<Paged<MemberRow>> {
    return this.#paged<MemberRow>(
      'FROM cp_members m JOIN cp_users u ON u.id = m.user_id WHERE m.workspace_id = ?',
      [workspaceId],
      'm.created_at, m.user_id',
      page,
      // Both tables have role and times: the member's must win.
      'm.*, u.email, u.name',
    );
  }

  async removeMember(workspaceId: string, userId: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_members WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId])).changes > 0;
  }

  // API keys

  apiKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.#get<ApiKeyRow>('SELECT * FROM cp_api_keys WHERE id = ?', [id]);
  }

  /** The key whose current or previous secret has this digest. */
  apiKeyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.#get<ApiKeyRow>('SELECT * FROM cp_api_keys WHERE key_hash = ? OR previous_hash = ?', [hash, hash]);
  }

  apiKeys(filter: { workspaceId?: string | null; type?: string; userId?: string }, page: Page): Promise<Paged<ApiKeyRow>> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.workspaceId !== undefined) {
      where.push(filter.workspaceId === null ? 'workspace_id IS NULL' : 'workspace_id = ?');
      if (filter.workspaceId !== null) params.push(filter.workspaceId);
    }
    if (filter.type !== undefined) {
      where.push('type = ?');
      params.push(filter.type);
    }
    if (filter.userId !== undefined) {
      where.push('user_id = ?');
      params.push(filter.userId);
    }
    return this.#paged<ApiKeyRow>(`FROM cp_api_keys${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`, params, 'created_at, id', page);
  }

  async deleteApiKey(id: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_api_keys WHERE id = ?', [id])).changes > 0;
  }

  async countApiKeys(client = this.db()): Promise<number> {
    return Number((await client.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM cp_api_keys', []))?.n ?? 0);
  }

  // Prompts and partials. By id a row of any status; by slug (name) only an active one, since archiving frees it.

  prompt(workspaceId: string | null, idOrSlug: string): Promise<PromptRow | undefined> {
    return workspaceId === null
      ? this.#get<PromptRow>('SELECT * FROM cp_prompts WHERE id = ?', [idOrSlug])
      : this.#get<PromptRow>("SELECT * FROM cp_prompts WHERE workspace_id = ? AND (id = ? OR (slug = ? AND status = 'active'))", [workspaceId, idOrSlug, idOrSlug]);
  }

  prompts(workspaceId: string, statuses: readonly string[], page: Page): Promise<Paged<PromptRow>> {
    return this.#paged<PromptRow>(
      `FROM cp_prompts WHERE workspace_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [workspaceId, ...statuses],
      'created_at, id',
      page,
    );
  }

  promptVersion(promptId: string, version: number, client = this.db()): Promise<PromptVersionRow | undefined> {
    return this.#get<PromptVersionRow>('SELECT * FROM cp_prompt_versions WHERE prompt_id = ? AND version = ?', [promptId, version], client);
  }

  promptVersions(promptId: string, page: Page): Promise<Paged<PromptVersionRow>> {
    return this.#paged<PromptVersionRow>('FROM cp_prompt_versions WHERE prompt_id = ?', [promptId], 'version DESC', page);
  }

  partial(workspaceId: string | null, idOrName: string): Promise<PartialRow | undefined> {
    return workspaceId === null
      ? this.#get<PartialRow>('SELECT * FROM cp_prompt_partials WHERE id = ?', [idOrName])
      : this.#get<PartialRow>("SELECT * FROM cp_prompt_partials WHERE workspace_id = ? AND (id = ? OR (name = ? AND status = 'active'))", [workspaceId, idOrName, idOrName]);
  }

  /** The workspace's active partial of this name (what `{{> name}}` includes). */
  activePartial(workspaceId: string, name: string): Promise<PartialRow | undefined> {
    return this.#get<PartialRow>("SELECT * FROM cp_prompt_partials WHERE workspace_id = ? AND name = ? AND status = 'active'", [workspaceId, name]);
  }

  partials(workspaceId: string, statuses: readonly string[], page: Page): Promise<Paged<PartialRow>> {
    return this.#paged<PartialRow>(
      `FROM cp_prompt_partials WHERE workspace_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [workspaceId, ...statuses],
      'created_at, id',
      page,
    );
  }

  partialVersion(partialId: string, version: number, client = this.db()): Promise<PartialVersionRow | undefined> {
    return this.#get<PartialVersionRow>('SELECT * FROM cp_prompt_partial_versions WHERE partial_id = ? AND version = ?', [partialId, version], client);
  }

  partialVersions(partialId: string, page: Page): Promise<Paged<PartialVersionRow>> {
    return this.#paged<PartialVersionRow>('FROM cp_prompt_partial_versions WHERE partial_id = ?', [partialId], 'version DESC', page);
  }

  // MCP servers, connections and sessions

  mcpServer(id: string): Promise<McpServerRow | undefined> {
    return this.#get<McpServerRow>('SELECT * FROM cp_mcp_servers WHERE id = ?', [id]);
  }

  mcpServers(filter: { workspaceId: string | null; status?: string }, page: Page): Promise<Paged<McpServerRow>> {
    const { where, params } = serverFilter(filter);
    return this.#paged<McpServerRow>(`FROM cp_mcp_servers${where}`, params, 'created_at, id', page);
  }

  mcpConnection(serverId: string, subject: string): Promise<McpConnectionRow | undefined> {
    return this.#get<McpConnectionRow>('SELECT * FROM cp_mcp_connections WHERE mcp_server_id = ? AND subject = ?', [serverId, subject]);
  }

  mcpConnectionById(id: string): Promise<McpConnectionRow | undefined> {
    return this.#get<McpConnectionRow>('SELECT * FROM cp_mcp_connections WHERE id = ?', [id]);
  }

  /** A server's connections, oldest first, with how many sessions each has open; `subject` narrows to one. */
  mcpConnections(serverId: string, subject: string | null, page: Page): Promise<Paged<McpConnectionRow>> {
    const params: unknown[] = [serverId];
    let from = 'FROM cp_mcp_connections c WHERE c.mcp_server_id = ?';
    if (subject !== null) {
      from += ' AND c.subject = ?';
      params.push(subject);
    }
    return this.#paged<McpConnectionRow>(from, params, 'c.created_at, c.id', page, 'c.*, (SELECT COUNT(*) FROM cp_mcp_sessions s WHERE s.connection_id = c.id) AS active_sessions');
  }

  mcpSession(idHash: string): Promise<McpSessionRow | undefined> {
    return this.#get<McpSessionRow>('SELECT * FROM cp_mcp_sessions WHERE id = ?', [idHash]);
  }

  mcpSessionsOf(connectionId: string): Promise<McpSessionRow[]> {
    return this.#all<McpSessionRow>('SELECT * FROM cp_mcp_sessions WHERE connection_id = ?', [connectionId]);
  }

  /** Which of these session digests still have a row. */
  async liveMcpSessions(idHashes: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < idHashes.length; i += 500) {
      const chunk = idHashes.slice(i, i + 500);
      const rows = await this.db().all<{ id: string }>(`SELECT id FROM cp_mcp_sessions WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk);
      for (const r of rows) out.add(r.id);
    }
    return out;
  }

  async deleteMcpSession(idHash: string): Promise<void> {
    await this.db().run('DELETE FROM cp_mcp_sessions WHERE id = ?', [idHash]);
  }

  async deleteIdleMcpSessions(before: number): Promise<number> {
    return (await this.db().run('DELETE FROM cp_mcp_sessions WHERE last_used_at < ?', [before])).changes;
  }

  /** Forgets a connection: its sessions and its tokens, in one transaction. */
  async deleteMcpConnection(id: string): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_mcp_sessions WHERE connection_id = ?', [id]);
      await tx.run('DELETE FROM cp_mcp_connections WHERE id = ?', [id]);
    });
  }

  // Agent servers

  agentServer(id: string): Promise<AgentServerRow | undefined> {
    return this.#get<AgentServerRow>('SELECT * FROM cp_agent_servers WHERE id = ?', [id]);
  }

  agentServers(filter: { workspaceId: string | null; status?: string }, page: Page): Promise<Paged<AgentServerRow>> {
    const { where, params } = serverFilter(filter);
    // The cached card can be large: a list shows whether there is one, GET …/agent-card shows it.
    return this.#paged<AgentServerRow>(
      `FROM cp_agent_servers${where}`,
      params,
      'created_at, id',
      page,
      'id, organisation_id, workspace_id, name, description, url, auth_type, auth_header, auth_secret, auth_masked, request_timeout_ms, NULL AS agent_card, agent_card_fetched_at, status, created_at, updated_at, archived_at',
    );
  }
}

/** The WHERE of a list of workspace resources: one workspace (all, for null) and a status. */
function serverFilter(filter: { workspaceId: string | null; status?: string }): { where: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.workspaceId !== null) {
    where.push('workspace_id = ?');
    params.push(filter.workspaceId);
  }
  if (filter.status !== undefined) {
    where.push('status = ?');
    params.push(filter.status);
  }
  return { where: where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`, params };
}
