import { GatewayError, serviceToken, stateKey, type ErrorCodeSpec, type RequestContext, type Target } from '../core/index.js';

/**
 * The request's overall deadline (docs/configuration.md#deadline): set by the `routing` plugin from
 * `deadline` in the config or `x-gateway-deadline`; retries, fallbacks and each attempt's timeout
 * draw from it. `at` is on the `performance.now()` clock, like `ctx.startedAt`.
 */
export interface Deadline {
  /** The budget given, in ms from the request's arrival. */
  ms: number;
  /** When it passes (`performance.now()` clock). */
  at: number;
}
/** The {@link Deadline} of a request that has one. */
export const DEADLINE = stateKey<Deadline>('routing:deadline');

/** The code and meaning of a request whose deadline passed. */
export const DEADLINE_ERROR: Readonly<Record<'deadline_exceeded', ErrorCodeSpec>> = Object.freeze({ deadline_exceeded: Object.freeze({ status: 408, type: 'timeout_error' }) });

/** Milliseconds left before the request's deadline; Infinity when it has none. */
export function deadlineLeft(ctx: RequestContext): number {
  const d = ctx.get(DEADLINE);
  return d === undefined ? Infinity : d.at - performance.now();
}

/**
 * The 408 of a request whose deadline passed, saying how its time went: the attempts made, the time in
 * upstream calls and the rest (waits between attempts, the gateway's own work).
 */
export function deadlineError(ctx: RequestContext): GatewayError {
  const d = ctx.get(DEADLINE);
  const ms = d?.ms ?? 0;
  const elapsed = Math.round(performance.now() - ctx.startedAt);
  let upstream = 0;
  for (const a of ctx.attempts) upstream += a.latencyMs;
  const calls = ctx.attempts.length;
  const spent = calls === 0 ? 'no upstream call was made' : `${calls} upstream attempt${calls === 1 ? '' : 's'} took ${Math.round(upstream)} ms, waits between them and the gateway's own work ${Math.max(0, elapsed - Math.round(upstream))} ms`;
  return new GatewayError('deadline_exceeded', `The request's deadline of ${ms} ms passed after ${elapsed} ms: ${spent}. No attempt is started after the deadline.`, { spec: DEADLINE_ERROR.deadline_exceeded });
}

/** Weight of a loadbalance target: `weight`, default 1; negative or non-numbers count as 0. */
export function weightOf(target: Target): number {
  const w = target.weight;
  if (w === undefined) return 1;
  return typeof w === 'number' && w > 0 ? w : 0;
}

/** Index picked for a draw `r` in [0, 1) over `weights`, or -1 when no weight is positive. Weight 0 is never picked. */
export function pickWeighted(weights: readonly number[], r: number): number {
  let total = 0;
  for (const w of weights) total += w;
  if (total <= 0) return -1;
  let point = r * total;
  let last = -1;
  for (let i = 0; i < weights.length; i++) {
    if (weights[i]! <= 0) continue;
    last = i;
    if (point < weights[i]!) return i;
    point -= weights[i]!;
  }
  return last; // r * total rounded up to exactly total: the last positive weight
}

/** How a strategy should run its targets this time (see {@link RoutingService}). */
export interface RoutePlan {
  /** Indexes of the targets to try, in order (loadbalance: the first is the one chosen). Empty: none can take the request. */
  order: number[];
  /** With an empty order: the error to answer (a 429 saying when the earliest target resets). */
  exhausted: GatewayError | null;
}

/**
 * Routing that knows the providers' state (offered by the `routing` plugin): which targets of a
 * loadbalance or fallback can take this request now (rate-limit headroom, `retry-after`), which is
 * fastest, which one a conversation is kept on. Strategies ask it when it is there and run their
 * own rule (weights, order) when it is not.
 */
export interface RoutingService {
  /**
   * The plan for running `parent`'s `targets`. `random` is the strategy's own source (weights).
   * Records the decision for the log and the trace.
   */
  plan(ctx: RequestContext, parent: Target, targets: readonly Target[], path: string, mode: 'loadbalance' | 'fallback', random: () => number): RoutePlan | Promise<RoutePlan>;
  /** The typical time to an answer of the target about to be called, when known (ms): a retry that cannot finish in time is not started. */
  typicalLatencyMs(ctx: RequestContext): number | null;
}
/** The {@link RoutingService} service (offered by the `routing` plugin). */
export const ROUTING = serviceToken<RoutingService>('gateway.routing');

/** Why one target cannot take a request now (see {@link TargetLimitsService}). */
export interface TargetBlock {
  /** `budget_spent` (a usage limit) or `rate_limited` (a rate limit) whose conditions name this target's provider. */
  reason: 'budget_spent' | 'rate_limited';
  /** When it can again (epoch ms): its window's or period's end; null for a budget that never resets. */
  until: number | null;
  /** The policy's id. */
  policy: string;
}

/**
 * The limits that hold for some targets of a request and not others (offered by the `limits` plugin):
 * a budget or rate limit whose conditions name a provider is checked when that provider's target is
 * called, not for the whole request, and routing asks it first so a target whose budget is spent is
 * skipped rather than called and refused.
 */
export interface TargetLimitsService {
  /**
   * Per target of `targets`: null when it can take the request as far as such limits know, else why
   * not. Targets with children (a nested strategy) are null. Counts nothing.
   */
  blocked(ctx: RequestContext, targets: readonly Target[]): ReadonlyArray<TargetBlock | null> | Promise<ReadonlyArray<TargetBlock | null>>;
}
/** The {@link TargetLimitsService} service (offered by the `limits` plugin). */
export const TARGET_LIMITS = serviceToken<TargetLimitsService>('gateway.target-limits');
