import type { SqlClient } from '../../../sdk/index.js';
import { SqlTables, type Page, type Paged, type VersionedTables } from '../../../sdk/admin/index.js';

/** What prompts and partials have in common: numbered versions, one of them published, archived rather than deleted. */
export interface VersionedHead {
  id: string;
  workspace_id: string;
  status: 'active' | 'archived';
  latest_version: number;
  published_version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}

/** Rows as stored. JSON columns are TEXT; times are epoch ms. */
export interface PromptRow extends VersionedHead {
  slug: string;
  name: string;
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
export interface PartialRow extends VersionedHead {
  name: string;
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

/** The tables of one kind, and the column that names a row in its workspace (unique among the active ones). */
export interface KindTables extends VersionedTables {
  handle: 'slug' | 'name';
}

export const PROMPT_TABLES: KindTables = Object.freeze({ table: 'cp_prompts', counter: 'latest_version', versions: 'cp_prompt_versions', key: 'prompt_id', handle: 'slug' });
export const PARTIAL_TABLES: KindTables = Object.freeze({ table: 'cp_prompt_partials', counter: 'latest_version', versions: 'cp_prompt_partial_versions', key: 'partial_id', handle: 'name' });

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'archived_at', 'version', 'latest_version', 'published_version']);

/**
 * The statements of one kind (prompts or partials). By id a row of any
 * status; by slug (a partial's name) only an active one, since archiving frees it.
 */
export class VersionedRows<R extends VersionedHead, V> {
  constructor(
    readonly tables: SqlTables,
    readonly t: KindTables,
  ) {}

  /** By id in any workspace (`null`), or by id or active handle in one. */
  find(workspaceId: string | null, ref: string, client?: SqlClient): Promise<R | undefined> {
    const { table, handle } = this.t;
    return workspaceId === null
      ? this.tables.get<R>(`SELECT * FROM ${table} WHERE id = ?`, [ref], client)
      : this.tables.get<R>(`SELECT * FROM ${table} WHERE workspace_id = ? AND (id = ? OR (${handle} = ? AND status = 'active'))`, [workspaceId, ref, ref], client);
  }

  /** The workspace's active row of this handle (for partials, what `{{> name}}` includes). */
  active(workspaceId: string, handle: string): Promise<R | undefined> {
    return this.tables.get<R>(`SELECT * FROM ${this.t.table} WHERE workspace_id = ? AND ${this.t.handle} = ? AND status = 'active'`, [workspaceId, handle]);
  }

  list(workspaceId: string, statuses: readonly string[], page: Page): Promise<Paged<R>> {
    return this.tables.paged<R>(
      `FROM ${this.t.table} WHERE workspace_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [workspaceId, ...statuses],
      'created_at, id',
      page,
    );
  }

  version(id: string, version: number, client?: SqlClient): Promise<V | undefined> {
    return this.tables.get<V>(`SELECT * FROM ${this.t.versions} WHERE ${this.t.key} = ? AND version = ?`, [id, version], client);
  }

  versions(id: string, page: Page): Promise<Paged<V>> {
    return this.tables.paged<V>(`FROM ${this.t.versions} WHERE ${this.t.key} = ?`, [id], 'version DESC', page);
  }

  /** Sets columns of one row. */
  update(id: string, patch: Record<string, unknown>, client?: SqlClient): Promise<number> {
    return this.tables.update(this.t.table, { id }, patch, client);
  }
}

/** The statements of stored prompts and partials, on the control plane's store. */
export class PromptRepository {
  readonly tables: SqlTables;
  readonly prompts: VersionedRows<PromptRow, PromptVersionRow>;
  readonly partials: VersionedRows<PartialRow, PartialVersionRow>;

  constructor(db: () => SqlClient) {
    this.tables = new SqlTables(db, NUMERIC);
    this.prompts = new VersionedRows(this.tables, PROMPT_TABLES);
    this.partials = new VersionedRows(this.tables, PARTIAL_TABLES);
  }
}
