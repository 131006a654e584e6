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
/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set([
  'created_at', 'updated_at', 'archived_at', 'previous_expires_at', 'last_rotated_at', 'expires_at', 'version',
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
}
