import * as v from 'valibot';
import { serviceToken, type GatewayError, type RequestContext, type Usage } from '../core/index.js';

/*
 * Rate-limit and usage-limit (budget) policies as the control plane stores
 * them and the `limits` plugin enforces them: their shape, the condition and
 * group_by keys, the schemas both validate with, and the clock arithmetic of
 * windows and periodic resets (UTC). Pure data and functions, shared so that
 * the admin API and the enforcer can never disagree on a key or a reset.
 */

/** What a rate limit counts: requests, or tokens (prompt and completion). */
export const RATE_LIMIT_TYPES = ['requests', 'tokens'] as const;
/** A rate limit's window: per minute, hour, day or week (fixed UTC windows; see {@link rateWindow}). */
export const RATE_LIMIT_UNITS = ['rpm', 'rph', 'rpd', 'rpw'] as const;
/** What a usage limit (budget) counts: cost in USD, or tokens. */
export const USAGE_LIMIT_TYPES = ['cost', 'tokens'] as const;
/** The named reset periods of a budget (`periodic_reset`); `periodic_reset_days` gives any other. */
export const PERIODIC_RESETS = ['weekly', 'monthly'] as const;
/** A stored policy's status: only `active` policies are enforced. */
export const POLICY_STATUSES = ['active', 'archived'] as const;

/**
 * `endpoint_type` of a request: its route, named for people (what `group_by` reports, and a
 * condition names). Other routes (a third party's) use their route name.
 */
export const ENDPOINT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  'chat.completions': 'chat',
  completions: 'completions',
  embeddings: 'embeddings',
  rerank: 'rerank',
  proxy: 'proxy',
  responses: 'responses',
  messages: 'messages',
  'messages.count_tokens': 'count_tokens',
});
const ENDPOINT_VALUES = Object.values(ENDPOINT_TYPES);

/**
 * The endpoint types a condition value holds for. `chat` is every door a chat
 * completion comes through: chat completions, the Responses API and the
 * Messages API (each a chat call to the provider, native or translated, with
 * the same tokens and cost), so a policy written "limit chat" cannot be
 * bypassed by switching doors; `responses` and `messages` name one door each.
 * Every other value holds for itself only.
 */
export const ENDPOINT_TYPE_MATCHES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  chat: Object.freeze(['chat', 'responses', 'messages']),
});

/** The endpoint types (as `group_by` reports them) a condition `endpoint_type: value` holds for. */
export function endpointTypesMatched(value: string): readonly string[] {
  return ENDPOINT_TYPE_MATCHES[value] ?? [value];
}

/** Keys a condition may test; `metadata.<key>` too. */
export const CONDITION_KEYS = ['workspace_id', 'api_key', 'endpoint_type', 'provider', 'model', 'user'] as const;
/** Keys a policy may group by (one bucket per distinct combination); `metadata.<key>` too. */
export const GROUP_BY_KEYS = ['api_key', 'workspace_id', 'user', 'model', 'endpoint_type'] as const;

const METADATA_KEY = /^metadata\.[A-Za-z0-9_.:-]{1,64}$/;

/** One of {@link RATE_LIMIT_TYPES}. */
export type RateLimitType = (typeof RATE_LIMIT_TYPES)[number];
/** One of {@link RATE_LIMIT_UNITS}. */
export type RateLimitUnit = (typeof RATE_LIMIT_UNITS)[number];
/** One of {@link USAGE_LIMIT_TYPES}. */
export type UsageLimitType = (typeof USAGE_LIMIT_TYPES)[number];
/** One of {@link PERIODIC_RESETS}. */
export type PeriodicReset = (typeof PERIODIC_RESETS)[number];

/** One condition of a policy: the request's `key` (see {@link CONDITION_KEYS}) must be `value`. */
export interface LimitCondition {
  /** What to test: one of {@link CONDITION_KEYS}, or `metadata.<key>`. */
  key: string;
  /** The value it must have (an `endpoint_type` value holds for the types {@link endpointTypesMatched} lists). */
  value: string;
}
/** One `group_by` key of a policy: each distinct value gets its own counter. */
export interface LimitGroupBy {
  /** One of {@link GROUP_BY_KEYS}, or `metadata.<key>`. */
  key: string;
}

interface PolicyBase {
  /** The policy's id. */
  id: string;
  /** A name for people (1 to 200 characters). */
  name: string;
  /** The workspace whose requests it limits; null for a policy of the server config (every request). */
  workspace_id: string | null;
  /** All must hold (conditions on one key: any of their values). */
  conditions: readonly LimitCondition[];
  /** The keys that split the policy into one counter per distinct combination; empty: one counter for all. */
  group_by: readonly LimitGroupBy[];
  /** When the counter store is unreachable: let requests through (true) or refuse them with 503. */
  fail_open: boolean;
}

/** Requests or tokens per minute, hour, day or week, in fixed UTC windows. */
export interface RateLimitPolicy extends PolicyBase {
  /** Marks a rate limit. */
  kind: 'rate';
  /** What it counts: requests or tokens. */
  type: RateLimitType;
  /** The window: per minute, hour, day or week. */
  unit: RateLimitUnit;
  /** How many requests or tokens a window allows (a whole number from 1). */
  value: number;
}

/** A budget of tokens or USD over a period that resets (or never does). Times are epoch ms. */
export interface UsageLimitPolicy extends PolicyBase {
  /** Marks a usage limit (a budget). */
  kind: 'usage';
  /** What it counts: cost (USD) or tokens. */
  type: UsageLimitType;
  /** The budget per period: USD for `cost`, a whole number of tokens for `tokens`. */
  credit_limit: number;
  /** Usage at which a warning is logged (at most `credit_limit`); null for none. */
  alert_threshold: number | null;
  /** Resets weekly (Monday 00:00 UTC) or monthly; null when `periodic_reset_days` is set or the budget never resets. */
  periodic_reset: PeriodicReset | null;
  /** Resets every N days (1 to 365); null when `periodic_reset` is set or the budget never resets. */
  periodic_reset_days: number | null;
  /** The stored next reset: the first boundary of the rule, or an override. Later ones follow from it. */
  next_usage_reset_at: number | null;
  /** Start of the period that `next_usage_reset_at` ends. */
  period_start_at: number;
  /** When the policy was created (epoch ms). */
  created_at: number;
}

/** A rate limit or a usage limit, told apart by `kind`. */
export type LimitPolicy = RateLimitPolicy | UsageLimitPolicy;

/** The active policies that may apply to one request, as a policy source hands them out (the same object while cached). */
export interface LimitPolicySet {
  /** The workspace the request acts in (null without a control plane). */
  readonly workspaceId: string | null;
  /** The policies, rate and usage limits alike. */
  readonly policies: readonly LimitPolicy[];
}

/** Whether `key` may be a condition key. */
export function isConditionKey(key: string): boolean {
  return (CONDITION_KEYS as readonly string[]).includes(key) || METADATA_KEY.test(key);
}

/** Whether `key` may be a group_by key. */
export function isGroupByKey(key: string): boolean {
  return (GROUP_BY_KEYS as readonly string[]).includes(key) || METADATA_KEY.test(key);
}

const CONDITION_KEY_MESSAGE = `must be one of ${CONDITION_KEYS.join(', ')} or metadata.<key> (letters, digits, _ . : -, at most 64)`;
const GROUP_KEY_MESSAGE = `must be one of ${GROUP_BY_KEYS.join(', ')} or metadata.<key> (letters, digits, _ . : -, at most 64)`;

const ConditionSchema = v.pipe(
  v.strictObject({
    key: v.pipe(v.string('must be a string'), v.check(isConditionKey, CONDITION_KEY_MESSAGE)),
    value: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(512, 'must be at most 512 characters')),
  }),
  v.forward(
    v.check((c) => c.key !== 'endpoint_type' || ENDPOINT_VALUES.includes(c.value), `an endpoint_type is one of ${ENDPOINT_VALUES.join(', ')}`),
    ['value'],
  ),
);

/** `conditions`: at most 20 `{key, value}`. */
export const LimitConditionsSchema = v.pipe(v.array(ConditionSchema, 'must be an array of {key, value}'), v.maxLength(20, 'holds at most 20 conditions'));

/** `group_by`: at most 5 distinct `{key}`. */
export const LimitGroupBySchema = v.pipe(
  v.array(v.strictObject({ key: v.pipe(v.string('must be a string'), v.check(isGroupByKey, GROUP_KEY_MESSAGE)) }), 'must be an array of {key}'),
  v.maxLength(5, 'holds at most 5 keys'),
  v.check((keys) => new Set(keys.map((k) => k.key)).size === keys.length, 'names a key twice'),
);

// Clock arithmetic, all in UTC.

/** One minute in milliseconds. */
export const MINUTE_MS = 60_000;
/** One hour in milliseconds. */
export const HOUR_MS = 60 * MINUTE_MS;
/** One day in milliseconds. */
export const DAY_MS = 24 * HOUR_MS;
/** One week in milliseconds. */
export const WEEK_MS = 7 * DAY_MS;
/** 1970-01-05, the first Monday after the epoch: weeks start on Monday 00:00 UTC. */
const FIRST_MONDAY = 4 * DAY_MS;

/** The length of each rate limit unit's window, in ms. */
export const RATE_UNIT_MS: Readonly<Record<RateLimitUnit, number>> = Object.freeze({ rpm: MINUTE_MS, rph: HOUR_MS, rpd: DAY_MS, rpw: WEEK_MS });
/** How a unit reads in a message: "per minute". */
export const RATE_UNIT_WORDS: Readonly<Record<RateLimitUnit, string>> = Object.freeze({ rpm: 'minute', rph: 'hour', rpd: 'day', rpw: 'week' });

/** The fixed window holding `now`: a UTC minute, hour, day, or week from Monday 00:00 UTC. */
export function rateWindow(unit: RateLimitUnit, now: number): { start: number; end: number } {
  const length = RATE_UNIT_MS[unit];
  const offset = unit === 'rpw' ? FIRST_MONDAY : 0;
  const start = Math.floor((now - offset) / length) * length + offset;
  return { start, end: start + length };
}

/** 00:00 UTC of the day holding `ms`. */
export function utcMidnight(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** `day` of the month `months` after the one holding `t`, clamped to that month's last day, at 00:00 UTC. */
function monthDay(t: number, months: number, day: number): number {
  const d = new Date(t);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth() + months;
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, last));
}

/** The reset rule of a budget: `periodic_reset` or `periodic_reset_days` (never both), or none. */
export type ResetRule = Pick<UsageLimitPolicy, 'periodic_reset' | 'periodic_reset_days'>;

/**
 * The first reset after `now` under a rule: weekly on Monday 00:00 UTC,
 * monthly on the 1st at 00:00 UTC, every N days from today's 00:00 UTC;
 * null when the rule never resets.
 */
export function firstReset(rule: ResetRule, now: number): number | null {
  if (rule.periodic_reset_days !== null) return utcMidnight(now) + rule.periodic_reset_days * DAY_MS;
  if (rule.periodic_reset === 'weekly') return rateWindow('rpw', now).end;
  if (rule.periodic_reset === 'monthly') return monthDay(now, 1, 1);
  return null;
}

/**
 * The current period of a budget at `now`, from its stored anchor: resets
 * follow `next_usage_reset_at` by the rule (N days, 7 days, or the same day
 * of each month, clamped to short months), so every instance derives the same
 * boundaries from the same row with no write. `lastResetAt` is null until the
 * first reset.
 */
export function usagePeriod(p: Pick<UsageLimitPolicy, 'periodic_reset' | 'periodic_reset_days' | 'next_usage_reset_at' | 'period_start_at' | 'created_at'>, now: number): {
  start: number;
  end: number | null;
  lastResetAt: number | null;
} {
  let start = p.period_start_at;
  let next = p.next_usage_reset_at;
  if (next !== null && now >= next) {
    const step = p.periodic_reset_days !== null ? p.periodic_reset_days * DAY_MS : p.periodic_reset === 'weekly' ? WEEK_MS : null;
    if (step !== null) {
      const k = Math.floor((now - next) / step);
      start = next + k * step;
      next = start + step;
    } else if (p.periodic_reset === 'monthly') {
      const day = new Date(next).getUTCDate();
      const anchor = next;
      let months = 0;
      // About 12 turns a year since the anchor; periods are never shorter than 28 days.
      while (monthDay(anchor, months + 1, day) <= now) months++;
      start = monthDay(anchor, months, day);
      next = monthDay(anchor, months + 1, day);
    } else {
      // An override with no rule: one reset, then the budget runs on.
      start = next;
      next = null;
    }
  }
  return { start, end: next, lastResetAt: start === p.created_at ? null : start };
}

/** A USD amount for messages and headers: cents for whole-cent values, else to the nano-dollar (trailing zeros dropped, never an exponent). */
export function formatUsd(usd: number): string {
  const cents = Math.round(usd * 100);
  if (Math.abs(usd * 100 - cents) < 1e-7) return (cents / 100).toFixed(2);
  return usd.toFixed(9).replace(/0+$/, '');
}

/**
 * For a request that runs long and learns its usage as it goes (a realtime session): charges the usage so far
 * against the usage-limit policies the request holds, as a stream draws past its reservation. Provided by the
 * `limits` plugin (absent without it: nothing to charge).
 */
export interface SessionLimitsService {
  /**
   * `used` is the request's whole usage so far (not an increment). Resolves with the error that ends the session
   * when a policy has no more to give, else null. The request is settled to its real usage when it is logged.
   */
  charge(ctx: RequestContext, used: Usage): Promise<GatewayError | null>;
}

/** The {@link SessionLimitsService} (offered by the `limits` plugin): the realtime plugin charges a session's usage with it. */
export const SESSION_LIMITS = serviceToken<SessionLimitsService>('gateway.session-limits');
