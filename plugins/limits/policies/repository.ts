import type { SqlClient } from '../../../sdk/index.js';
import { SqlTables, type Page, type Paged } from '../../../sdk/admin/index.js';

/** A stored rate-limit (`kind` `rate`) or usage-limit (`usage`) policy, as its table holds it. */
export interface LimitPolicyRow {
  id: string;
  kind: 'rate' | 'usage';
  organisation_id: string;
  workspace_id: string;
  name: string;
  type: string;
  unit: string | null;
  value: number | null;
  credit_limit: number | null;
  alert_threshold: number | null;
  periodic_reset: string | null;
  periodic_reset_days: number | null;
  next_usage_reset_at: number | null;
  period_start_at: number | null;
  conditions: string;
  group_by: string;
  fail_open: number;
  status: 'active' | 'archived';
  /** `organisation`: made by an organisation-level key, which alone may change it; else `workspace`. */
  managed_by: 'organisation' | 'workspace';
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}

export type PolicyKind = LimitPolicyRow['kind'];

/** What a list of policies is narrowed to: one workspace (null: every one) and the columns given. */
export interface PolicyFilter {
  workspaceId: string | null;
  status?: string;
  type?: string;
  unit?: string;
  periodicReset?: string;
}

const TABLE = 'cp_limit_policies';

/** Numeric columns (BIGINT comes back as text from PostgreSQL). */
const NUMERIC: ReadonlySet<string> = new Set([
  'created_at', 'updated_at', 'archived_at',
  'value', 'credit_limit', 'alert_threshold', 'periodic_reset_days', 'next_usage_reset_at', 'period_start_at', 'fail_open',
]);

/** Every statement on the policies' table, against either SQL store. Policies are archived, never deleted. */
export class PolicyRepository {
  readonly #tables: SqlTables;

  constructor(db: () => SqlClient) {
    this.#tables = new SqlTables(db, NUMERIC);
  }

  get(kind: PolicyKind, id: string): Promise<LimitPolicyRow | undefined> {
    return this.#tables.get<LimitPolicyRow>(`SELECT * FROM ${TABLE} WHERE kind = ? AND id = ?`, [kind, id]);
  }

  /** One page of a kind's policies, oldest first. */
  list(kind: PolicyKind, filter: PolicyFilter, page: Page): Promise<Paged<LimitPolicyRow>> {
    const where = ['kind = ?'];
    const params: unknown[] = [kind];
    const add = (column: string, value: string | null | undefined) => {
      if (value === undefined || value === null) return;
      where.push(`${column} = ?`);
      params.push(value);
    };
    add('workspace_id', filter.workspaceId);
    add('status', filter.status);
    add('type', filter.type);
    add('unit', filter.unit);
    add('periodic_reset', filter.periodicReset);
    return this.#tables.paged<LimitPolicyRow>(`FROM ${TABLE} WHERE ${where.join(' AND ')}`, params, 'created_at, id', page);
  }

  /** A workspace's active policies of both kinds, oldest first (the order they are checked in). */
  active(workspaceId: string): Promise<LimitPolicyRow[]> {
    return this.#tables.all<LimitPolicyRow>(`SELECT * FROM ${TABLE} WHERE workspace_id = ? AND status = 'active' ORDER BY created_at, id`, [workspaceId]);
  }

  insert(row: LimitPolicyRow): Promise<void> {
    return this.#tables.insert(TABLE, { ...row });
  }

  update(id: string, patch: Record<string, unknown>): Promise<number> {
    return this.#tables.update(TABLE, { id }, patch);
  }
}
