import { formatUsd, RATE_UNIT_WORDS, type LimitPolicy } from '../../sdk/index.js';
import { NANO } from './estimate.js';
import { groupObject } from './match.js';

/** One policy's state for this request: what the headers and an error say. */
export interface PolicyState {
  policy: LimitPolicy;
  /** In the counter's own unit (nano-USD for cost budgets). */
  limit: number;
  used: number;
  reserved: number;
  /** What this request takes or would take. */
  amount: number;
  /** When the window or period ends (epoch ms); null for a budget that never resets. */
  resetAt: number | null;
  group: string;
}

/** The header suffix of a policy kind and type: `x-ratelimit-limit-<suffix>`. */
export function suffixOf(policy: LimitPolicy): string {
  if (policy.kind === 'rate') return policy.type; // requests, tokens
  return policy.type === 'cost' ? 'usage-cost' : 'usage-tokens';
}

const isCost = (p: LimitPolicy) => p.kind === 'usage' && p.type === 'cost';
const show = (p: LimitPolicy, n: number) => (isCost(p) ? formatUsd(n / NANO) : String(n));

/** Whole seconds until `at` (at least 1 while it is ahead). */
export function secondsUntil(at: number, now: number): number {
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/**
 * `x-ratelimit-limit-*`, `-remaining-*` and `-reset-*` for every kind of
 * policy that applied, each from its most constrained policy (least
 * remaining). Reset is in seconds; a budget that never resets has none.
 * Cost values are USD.
 */
export function limitHeaders(states: readonly PolicyState[], now: number, into: Record<string, string>): void {
  const best = new Map<string, PolicyState>();
  for (const s of states) {
    const suffix = suffixOf(s.policy);
    const known = best.get(suffix);
    if (known === undefined || remaining(s) < remaining(known)) best.set(suffix, s);
  }
  for (const [suffix, s] of best) {
    into[`x-ratelimit-limit-${suffix}`] = show(s.policy, s.limit);
    into[`x-ratelimit-remaining-${suffix}`] = show(s.policy, remaining(s));
    if (s.resetAt !== null) into[`x-ratelimit-reset-${suffix}`] = String(secondsUntil(s.resetAt, now));
  }
}

function remaining(s: PolicyState): number {
  return Math.max(0, s.limit - s.used - s.reserved);
}

/** ` for user "u-1", model "gpt-4o"`: the bucket, in the policy's group_by keys (values cut at 64 characters). */
function groupText(policy: LimitPolicy, group: string): string {
  const pairs = Object.entries(groupObject(policy, group));
  if (pairs.length === 0) return '';
  return ` for ${pairs.map(([k, value]) => `${k} ${JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)}`).join(', ')}`;
}

/** The message of a refusal: the policy (name and id), its limit, what is used and held, and when it resets. */
export function refusalMessage(s: PolicyState, now: number): string {
  const p = s.policy;
  const name = `policy "${p.name.slice(0, 100)}" (${p.id})`;
  const when = s.resetAt === null ? ' It does not reset.' : ` It resets in ${secondsUntil(s.resetAt, now)} s (${new Date(s.resetAt).toISOString()}).`;
  const held = s.reserved > 0 ? ` (${show(p, s.reserved)} more held by requests in flight)` : '';
  if (p.kind === 'rate') {
    const what = p.type === 'requests' ? 'requests' : 'tokens';
    const request = p.type === 'tokens' ? ` and this request needs an estimated ${s.amount}` : '';
    return `Rate limit exceeded: ${name} allows ${p.value} ${what} per ${RATE_UNIT_WORDS[p.unit]}${groupText(p, s.group)}; ${show(p, s.used)} used${held}${request}.${when}`;
  }
  const unit = p.type === 'cost' ? 'USD' : 'tokens';
  return `Usage limit exceeded: ${name} allows ${show(p, s.limit)} ${unit}${groupText(p, s.group)}; ${show(p, s.used)} used${held} and this request needs an estimated ${show(p, s.amount)}.${when}`;
}
