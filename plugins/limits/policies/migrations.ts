import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of rate-limit and usage-limit policies of workspaces. */
export const LIMIT_POLICIES_NAMESPACE = 'limit-policies';

/**
 * Rate-limit and usage-limit policies of workspaces.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const LIMIT_POLICIES_MIGRATIONS: readonly Migration[] = [
  {
    // Rate limits (kind 'rate': type, unit, value) and budgets (kind 'usage': type, credit_limit, the reset
    // rule and its anchor) of a workspace. Archived, never deleted: the log keeps naming their ids.
    version: 1,
    name: 'limit_policies',
    adopts: { namespace: 'control-plane', version: 2 },
    up: `
CREATE TABLE cp_limit_policies (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  unit TEXT,
  value BIGINT,
  credit_limit DOUBLE PRECISION,
  alert_threshold DOUBLE PRECISION,
  periodic_reset TEXT,
  periodic_reset_days INTEGER,
  next_usage_reset_at BIGINT,
  period_start_at BIGINT,
  conditions TEXT NOT NULL,
  group_by TEXT NOT NULL,
  fail_open INTEGER NOT NULL,
  status TEXT NOT NULL,
  managed_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
);
CREATE INDEX cp_limit_policies_workspace ON cp_limit_policies (workspace_id, kind, status)`,
  },
];
