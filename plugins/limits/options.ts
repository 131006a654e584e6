import {
  firstReset,
  LimitConditionsSchema,
  LimitGroupBySchema,
  PERIODIC_RESETS,
  RATE_LIMIT_TYPES,
  RATE_LIMIT_UNITS,
  USAGE_LIMIT_TYPES,
  v,
  type LimitPolicy,
} from '../../sdk/index.js';

const int = (min: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be an integer of at least ${min}`));
const Id = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1 to 64 letters, digits, _ . : or -'));

/** A rate limit in the server config: the admin API's fields, with an `id` of your choosing (it names the counters). */
const StaticRateLimit = v.strictObject({
  id: Id,
  name: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
  type: v.picklist(RATE_LIMIT_TYPES, `must be one of ${RATE_LIMIT_TYPES.join(', ')}`),
  unit: v.picklist(RATE_LIMIT_UNITS, `must be one of ${RATE_LIMIT_UNITS.join(', ')}`),
  value: int(1),
  conditions: v.optional(LimitConditionsSchema, []),
  group_by: v.optional(LimitGroupBySchema, []),
  fail_open: v.optional(v.boolean(), true),
});

/** A budget in the server config. Its periods count from the rule alone (not from a start time), so a restart keeps them. */
const StaticUsageLimit = v.pipe(
  v.strictObject({
    id: Id,
    name: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
    type: v.picklist(USAGE_LIMIT_TYPES, `must be one of ${USAGE_LIMIT_TYPES.join(', ')}`),
    credit_limit: v.pipe(v.number(), v.gtValue(0, 'must be above 0')),
    alert_threshold: v.optional(v.nullable(v.pipe(v.number(), v.gtValue(0, 'must be above 0')))),
    periodic_reset: v.optional(v.nullable(v.picklist(PERIODIC_RESETS, 'must be weekly or monthly'))),
    periodic_reset_days: v.optional(v.nullable(v.pipe(int(1), v.maxValue(365, 'must be at most 365')))),
    conditions: v.optional(LimitConditionsSchema, []),
    group_by: v.optional(LimitGroupBySchema, []),
    fail_open: v.optional(v.boolean(), true),
  }),
  v.check((p) => !(p.periodic_reset != null && p.periodic_reset_days != null), 'periodic_reset and periodic_reset_days are mutually exclusive'),
);

export const OptionsSchema = v.strictObject({
  /** Where counters live: `memory` (this instance) or `redis` (shared; needs the `redis` store plugin). */
  store: v.optional(v.picklist(['memory', 'redis'], 'must be memory or redis'), 'memory'),
  /** The store plugin holding the Redis connection. */
  connection: v.optional(v.pipe(v.string(), v.minLength(1)), 'redis'),
  /** Policies of the server config, applied to every request (besides the control plane's, per workspace). */
  rateLimits: v.optional(v.array(StaticRateLimit), []),
  usageLimits: v.optional(v.array(StaticUsageLimit), []),
  /** Completion tokens reserved for a request that sets no `max_tokens` (or `max_completion_tokens`, `max_output_tokens`). */
  defaultCompletionTokens: v.optional(int(1), 1024),
  /** How long a reservation lives when its request never settles it (a crash); a longer stream still counts when it ends. */
  reservationTtlMs: v.optional(int(1000), 600_000),
  /** The same, for a socket session (realtime), whose reservations and draws live until it ends: at least its longest. */
  sessionReservationTtlMs: v.optional(int(1000), 2 * 60 * 60_000),
  /** A request for a model with no known price under a cost budget: `refuse` (400 `usage_limit_unpriced`) or `allow` (counted as 0 USD, with a warning). */
  unpricedModels: v.optional(v.picklist(['refuse', 'allow'], 'must be refuse or allow'), 'refuse'),
  /** At most one warning per this many ms for a store outage (and per model for unpriced models). */
  warnIntervalMs: v.optional(int(0), 60_000),
  /** Memory store: a file the counters are saved to and read back from at start (the server passes `<GATEWAY_DATA_DIR>/limits.json`). */
  persistFile: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Memory store: how often changed counters are saved. */
  saveIntervalMs: v.optional(int(100), 10_000),
  /** Memory store: how often expired reservations are released and finished windows dropped without traffic. */
  sweepIntervalMs: v.optional(int(100), 10_000),
  /** Rate limits and budgets the control plane stores are enforced too (when it is loaded). */
  useControlPlane: v.optional(v.boolean(), true),
});

export type LimitsOptionsInput = v.InferInput<typeof OptionsSchema>;
export type LimitsOptionsParsed = v.InferOutput<typeof OptionsSchema>;

/** The server config's policies as the enforcer's own shape. */
export function staticPolicies(opts: LimitsOptionsParsed): LimitPolicy[] {
  const out: LimitPolicy[] = [];
  const ids = new Set<string>();
  const once = (id: string) => {
    if (ids.has(id)) throw new Error(`Invalid options for limits: policy id "${id}" appears twice`);
    ids.add(id);
  };
  for (const r of opts.rateLimits) {
    once(r.id);
    out.push({ kind: 'rate', id: r.id, name: r.name ?? r.id, workspace_id: null, type: r.type, unit: r.unit, value: r.value, conditions: r.conditions, group_by: r.group_by, fail_open: r.fail_open });
  }
  for (const u of opts.usageLimits) {
    once(u.id);
    if (u.type === 'tokens' && !Number.isInteger(u.credit_limit)) throw new Error(`Invalid options for limits: usage limit "${u.id}": a tokens credit_limit must be an integer`);
    const rule = { periodic_reset: u.periodic_reset ?? null, periodic_reset_days: u.periodic_reset_days ?? null };
    // Anchored at the epoch: every start of the server finds the same periods (and so the same counters).
    const next = firstReset(rule, 0);
    out.push({
      kind: 'usage',
      id: u.id,
      name: u.name ?? u.id,
      workspace_id: null,
      type: u.type,
      credit_limit: u.credit_limit,
      alert_threshold: u.alert_threshold ?? null,
      ...rule,
      next_usage_reset_at: next,
      period_start_at: 0,
      created_at: 0,
      conditions: u.conditions,
      group_by: u.group_by,
      fail_open: u.fail_open,
    });
  }
  return out;
}
