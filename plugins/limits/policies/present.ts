import { usagePeriod, type LimitCondition, type LimitGroupBy, type LimitPolicy, type RateLimitPolicy, type UsageLimitPolicy } from '../../../sdk/index.js';
import { iso } from '../../../sdk/admin/index.js';
import type { LimitPolicyRow } from './repository.js';

/** A stored row as the enforcer's policy (JSON columns parsed once, when the cache fills). */
export function toPolicy(row: LimitPolicyRow): LimitPolicy {
  const base = {
    id: row.id,
    name: row.name,
    workspace_id: row.workspace_id,
    conditions: JSON.parse(row.conditions) as LimitCondition[],
    group_by: JSON.parse(row.group_by) as LimitGroupBy[],
    fail_open: row.fail_open === 1,
  };
  if (row.kind === 'rate') {
    return { ...base, kind: 'rate', type: row.type as RateLimitPolicy['type'], unit: row.unit as RateLimitPolicy['unit'], value: row.value! };
  }
  return {
    ...base,
    kind: 'usage',
    type: row.type as UsageLimitPolicy['type'],
    credit_limit: row.credit_limit!,
    alert_threshold: row.alert_threshold,
    periodic_reset: row.periodic_reset as UsageLimitPolicy['periodic_reset'],
    periodic_reset_days: row.periodic_reset_days,
    next_usage_reset_at: row.next_usage_reset_at,
    period_start_at: row.period_start_at ?? row.created_at,
    created_at: row.created_at,
  };
}

/** A policy as the admin API shows it (spec field names, ISO times). */
export function presentPolicy(row: LimitPolicyRow, now: number): Record<string, unknown> {
  const common = {
    name: row.name,
    type: row.type,
    status: row.status,
    workspace_id: row.workspace_id,
    organisation_id: row.organisation_id,
    conditions: JSON.parse(row.conditions) as unknown,
    group_by: JSON.parse(row.group_by) as unknown,
    fail_open: row.fail_open === 1,
    managed_by: row.managed_by,
    created_at: iso(row.created_at),
    last_updated_at: iso(row.updated_at),
  };
  if (row.kind === 'rate') return { id: row.id, object: 'policy_rate_limits', ...common, unit: row.unit, value: row.value };
  // The reset times are derived from the stored rule and the clock, the same on every instance.
  const period = usagePeriod(toPolicy(row) as UsageLimitPolicy, now);
  return {
    id: row.id,
    object: 'policy_usage_limits',
    ...common,
    credit_limit: row.credit_limit,
    alert_threshold: row.alert_threshold,
    periodic_reset: row.periodic_reset,
    periodic_reset_days: row.periodic_reset_days,
    next_usage_reset_at: iso(period.end),
    last_reset_at: iso(period.lastResetAt),
  };
}
