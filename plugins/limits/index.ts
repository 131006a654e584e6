import {
  bundledPricing,
  captureResponses,
  DEFAULT_SCAN_LIMIT,
  defineErrors,
  type GatewayError,
  type GatewayPlugin,
  type LimitPolicy,
  type LimitPolicySet,
  type ModelPrice,
  parseOptions,
  pricingOf,
  PRICING,
  type PricingTable,
  randomHex,
  rateWindow,
  type RequestContext,
  redisConnectionOf,
  requestSummary,
  USAGE_SEGMENTS,
  type RequestSummary,
  type UsageSegment,
  STAGES,
  type UsageLimitPolicy,
  usagePeriod,
  stateKey,
  SESSION_LIMITS,
  streamControl,
  TARGET_LIMITS,
  type TargetBlock,
  type TargetLimitsService,
  TENANCY,
  tenantOf,
} from '../../sdk/index.js';
import { IDENTITY } from '../../sdk/admin/index.js';
import { estimateNanoUsd, estimateTokens, NANO, nanoUsd, priceForRequest, requestedModel, usageNanoUsd, type TokenEstimate } from './estimate.js';
import { limitHeaders, refusalMessage, secondsUntil, type PolicyState } from './headers.js';
import { compileSet, groupObject, holdsForSomeTargets, namesProviderOf, type CompiledPolicy } from './match.js';
import { memoryLimitStore } from './memory-store.js';
import { chargeSession } from './session-budget.js';
import { OptionsSchema, staticPolicies, type LimitsOptionsInput } from './options.js';
import { storedPolicies, type LimitCounters } from './policies/index.js';
import { redisLimitStore } from './redis-store.js';
import { holdMember, type CheckItem, type Hold, type LimitStore } from './store.js';
import { streamBudget } from './stream-budget.js';

export const PLUGIN_NAME = 'limits';

/** The codes this plugin answers with (docs/limits.md). */
const limitError = defineErrors({
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  usage_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  limit_store_unavailable: { status: 503, type: 'server_error' },
  usage_limit_unpriced: { status: 400, type: 'invalid_request_error' },
});
export const LIMIT_ERRORS = limitError.codes;

export type LimitsOptions = LimitsOptionsInput & {
  /** Clock in epoch ms (windows, periods, reservations); replace it in tests. */
  now?: () => number;
};

/** One reservation a request holds, and what settles it. */
interface HeldEntry {
  hold: Hold;
  /** What its real amount is counted in. */
  kind: 'tokens' | 'cost';
  /** Its policy's limit, and the policy (for a stream that draws more, see stream-budget.ts). */
  limit: number;
  policy: LimitPolicy;
  /** The price a cost budget reserved with, for an answer the price list cannot price itself. */
  price: ModelPrice | null;
  /** True for a draw a stream made past its reservation (settled to 0: the first hold carries the real amount). */
  extra: boolean;
  /** The target path of a policy checked when that target was called (settled to 0 unless it answered); null for the whole request. */
  leaf: string | null;
}

/** What a request holds until its answer is in, kept on the request under {@link HELD}. */
interface Held {
  entries: HeldEntry[];
  /** Output tokens the reservation covers (the estimate's completion part). */
  completion: number;
  requestId: string;
}
const HELD = stateKey<Held>(PLUGIN_NAME);

/** Policies matched by a request that hold for some of its targets only, checked when one of those is called. */
const DEFERRED = stateKey<{ workspaceId: string | null; policies: readonly CompiledPolicy[] }>(`${PLUGIN_NAME}:per-target`);
/** The refusals of a request's targets and their policies: the log names one only when it became the request's answer. */
const TARGET_REFUSALS = stateKey<Array<{ error: GatewayError; policy: string }>>(`${PLUGIN_NAME}:target-refusals`);
export type { Held, HeldEntry };

/** The entry a `redis` store plugin registers. */
const NO_POLICIES: readonly CompiledPolicy[] = Object.freeze([]);

/**
 * Rate limits and budgets (docs/limits.md). Every active policy whose
 * conditions match a request is checked before guardrails, the cache and the
 * provider (stage `beforeRequest.LIMIT`): requests are counted atomically;
 * tokens and cost are reserved from an estimate, then settled to the real
 * usage once the answer ended (stage `log.SETTLE`), released when there was
 * none. Policies come from `rateLimits` / `usageLimits` and, when the
 * control plane is loaded, from its store (per workspace, through a cache),
 * managed with this plugin's admin routes (`/v1/policies/…`). Counters live in
 * memory or in Redis (one Lua script per check).
 */
export function limits(options: LimitsOptions = {}): GatewayPlugin {
  const { now: clock = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const fixed: LimitPolicySet = Object.freeze({ workspaceId: null, policies: Object.freeze(staticPolicies(opts)) });
  const fixedCompiled = compileSet(fixed);
  return {
    name: PLUGIN_NAME,
    errorCodes: LIMIT_ERRORS,
    provides: [TARGET_LIMITS, SESSION_LIMITS],
    // Workspaces' stored policies and their admin routes; without the control plane, the server config's alone.
    uses: [IDENTITY, PRICING, TENANCY],
    state: [
      { name: 'counters', scope: 'workspace', keyedBy: "Rate and budget counters: by policy and group. A workspace's policies are its own; an organisation-wide policy counts per workspace what a workspace names (an end user, a metadata value, a provider slug)." },
      { name: 'organisation-counters', scope: 'organisation', keyedBy: "An organisation-wide policy (the server config's limits) over what no workspace names (keys, models, endpoints, the whole traffic) is one counter for every workspace: that is what it limits." },
    ],
    apply(api) {
      let store: LimitStore | null = null;
      const tenant = tenantOf(api);
      let pricing: PricingTable = bundledPricing();
      const pending = new Set<Promise<void>>();
      // Usage from streams and JSON answers, for settling (the log store asks for the same capture).
      captureResponses(api, { scanLimit: DEFAULT_SCAN_LIMIT, bodyLimit: 0 });

      api.onReady(async () => {
        pricing = pricingOf(api);
        if (opts.store === 'redis') {
          const connection = redisConnectionOf(api, opts.connection, PLUGIN_NAME);
          store = redisLimitStore(connection, (acked) =>
            warn('replicas', { acked, wanted: connection.replicaWait?.replicas }, 'limits: a count reached fewer Redis replicas than asked in time; a failover now could forget it'),
          );
        } else {
          store = await memoryLimitStore({
            now: clock,
            sweepIntervalMs: opts.sweepIntervalMs,
            file: opts.persistFile ?? null,
            saveIntervalMs: opts.saveIntervalMs,
            logger: api.logger,
          });
        }
      });

      // Warnings: at most one per interval per subject, with the count of those left out.
      const warned = new Map<string, { at: number; skipped: number }>();
      const warn = (subject: string, fields: Record<string, unknown>, message: string) => {
        const t = clock();
        const last = warned.get(subject);
        if (last !== undefined && t - last.at < opts.warnIntervalMs) {
          last.skipped++;
          return;
        }
        if (warned.size > 1000) warned.clear();
        warned.set(subject, { at: t, skipped: 0 });
        api.logger.warn({ ...fields, ...(last !== undefined && last.skipped > 0 ? { suppressed: last.skipped } : {}) }, message);
      };
      const storeDown = (err: unknown) =>
        warn('store', { err: (err as Error)?.message ?? String(err), store: opts.store }, 'limits: the counter store is unreachable; fail-open policies let requests through, fail-closed ones refuse them (503)');
      const unpriced = (model: string) => warn(`unpriced:${model}`, { model: model.slice(0, 128) }, 'limits: a cost budget applies to a model with no known price; its cost is counted as 0');

      // The current period of a budget, recomputed only when it ended (periods are derived from the row and the clock).
      const periods = new WeakMap<UsageLimitPolicy, { start: number; end: number | null }>();
      const periodOf = (p: UsageLimitPolicy, t: number) => {
        let known = periods.get(p);
        if (known === undefined || t < known.start || (known.end !== null && t >= known.end)) {
          known = usagePeriod(p, t);
          periods.set(p, known);
        }
        return known;
      };
      const windowOf = (p: LimitPolicy, t: number): { bucket: string; start: number; end: number | null } => {
        if (p.kind === 'rate') {
          const w = rateWindow(p.unit, t);
          return { bucket: `${p.id}:r:${p.unit}:${w.start}`, start: w.start, end: w.end };
        }
        const period = periodOf(p, t);
        return { bucket: `${p.id}:u:${period.start}`, start: period.start, end: period.end };
      };

      /** The error of a stream cut by a policy: the refusal a request would have got, said of the stream. */
      const refusalOf = (policy: LimitPolicy, ctx: RequestContext): GatewayError => {
        ctx.logFields.limit_policy_id = policy.id;
        return limitError(policy.kind === 'rate' ? 'rate_limit_exceeded' : 'usage_limit_exceeded', `The ${policy.kind === 'rate' ? 'rate limit' : 'usage limit'} "${policy.name.slice(0, 100)}" (${policy.id}) has no more left for this answer.`);
      };

      const alerted = new Set<string>();
      const alert = (s: PolicyState, bucket: string) => {
        const p = s.policy;
        if (p.kind !== 'usage' || p.alert_threshold === null) return;
        const threshold = p.type === 'cost' ? Math.round(p.alert_threshold * NANO) : p.alert_threshold;
        const key = `${bucket}\n${s.group}`;
        if (s.used + s.reserved < threshold || alerted.has(key)) return;
        if (alerted.size > 10_000) alerted.clear();
        alerted.add(key);
        const scale = p.type === 'cost' ? NANO : 1;
        api.logger.warn(
          { policy_id: p.id, group: groupObject(p, s.group), used: s.used / scale, reserved: s.reserved / scale, alert_threshold: p.alert_threshold, credit_limit: p.credit_limit },
          'limits: a usage limit reached its alert threshold',
        );
      };

      /** The counters a request takes from `matched`, and what each policy stands at (filled in by the store's answer). */
      const itemsOf = (ctx: RequestContext, matched: readonly CompiledPolicy[], workspaceId: string | null, now: number) => {
        let tokens: TokenEstimate | null = null;
        const tokenEstimate = () => (tokens ??= estimateTokens(ctx, opts.defaultCompletionTokens));
        let price: ModelPrice | null | undefined;
        const items: CheckItem[] = [];
        const states: PolicyState[] = [];
        for (const c of matched) {
          const p = c.policy;
          const group = c.groupOf(ctx, workspaceId);
          const w = windowOf(p, now);
          let amount: number;
          let limit: number;
          let reserve = true;
          if (p.kind === 'rate') {
            limit = p.value;
            if (p.type === 'requests') {
              amount = 1;
              reserve = false;
            } else {
              const t = tokenEstimate();
              amount = t.prompt + t.completion;
            }
          } else if (p.type === 'tokens') {
            limit = p.credit_limit;
            const t = tokenEstimate();
            amount = t.prompt + t.completion;
          } else {
            limit = Math.round(p.credit_limit * NANO);
            if (price === undefined) price = priceForRequest(ctx, pricing);
            if (price !== null) {
              amount = estimateNanoUsd(tokenEstimate(), price);
            } else {
              const model = requestedModel(ctx);
              if (model !== null && opts.unpricedModels === 'refuse') {
                ctx.logFields.limit_policy_id = p.id;
                throw limitError(
                  'usage_limit_unpriced',
                  `Model "${model.slice(0, 128)}" has no known price, so the cost budget "${p.name.slice(0, 100)}" (${p.id}) cannot be enforced; add its price (pricing plugin) or use a priced model.`,
                  { param: 'model' },
                );
              }
              // No model (a proxied call) or unpriced models allowed: nothing to reserve; the answer's cost still counts if it can be priced.
              amount = 0;
              if (model !== null) unpriced(model);
            }
          }
          items.push({ bucket: w.bucket, group, amount, limit, reserve, expireAt: w.end === null ? 0 : w.end + holdMs(ctx) });
          states.push({ policy: p, limit, used: 0, reserved: 0, amount, resetAt: w.end, group });
        }
        return { items, states, price: price ?? null, completion: (tokens as TokenEstimate | null)?.completion ?? 0 };
      };

      /**
       * Checks a request against `matched` and holds what it reserves (under {@link HELD}); throws the
       * refusal. `leaf`: the target path the policies hold for (checked when it is called), null for the whole request.
       */
      /** How long a reservation lives unsettled: a socket session's (realtime) for as long as a session may last. */
      const holdMs = (ctx: RequestContext): number => (ctx.upgrade === null ? opts.reservationTtlMs : Math.max(opts.reservationTtlMs, opts.sessionReservationTtlMs));
      const check = async (ctx: RequestContext, workspaceId: string | null, matched: readonly CompiledPolicy[], leaf: string | null): Promise<void> => {
        const now = clock();
        const { items, states, price, completion } = itemsOf(ctx, matched, workspaceId, now);
        const requestId = randomHex(8);
        let result;
        try {
          result = await store!.check(items, requestId, now, now + holdMs(ctx));
        } catch (err) {
          storeDown(err);
          const closed = matched.find((c) => !c.policy.fail_open);
          if (closed === undefined) return;
          ctx.logFields.limit_policy_id = closed.policy.id;
          throw limitError('limit_store_unavailable', `The limit counters cannot be reached and policy "${closed.policy.name.slice(0, 100)}" (${closed.policy.id}) fails closed; retry shortly.`, {
            headers: { 'retry-after': '5' },
          });
        }
        for (let i = 0; i < states.length; i++) {
          states[i]!.used = result.used[i]!;
          states[i]!.reserved = result.reserved[i]!;
        }
        limitHeaders(states, now, ctx.responseHeaders);
        if (result.denied !== -1) {
          const s = states[result.denied]!;
          ctx.logFields.limit_policy_id = s.policy.id;
          throw limitError(s.policy.kind === 'rate' ? 'rate_limit_exceeded' : 'usage_limit_exceeded', refusalMessage(s, now), {
            headers: s.resetAt === null ? undefined : { 'retry-after': String(secondsUntil(s.resetAt, now)) },
          });
        }
        let held = ctx.get(HELD);
        for (let i = 0; i < items.length; i++) {
          const item = items[i]!;
          alert(states[i]!, item.bucket);
          if (!item.reserve) continue;
          if (held === undefined) ctx.set(HELD, (held = { entries: [], completion, requestId }));
          const p = states[i]!.policy;
          held.entries.push({
            hold: { bucket: item.bucket, group: item.group, member: holdMember(requestId, item.amount, item.group), amount: item.amount, expireAt: item.expireAt },
            kind: p.kind === 'usage' && p.type === 'cost' ? 'cost' : 'tokens',
            limit: item.limit,
            policy: p,
            price,
            extra: false,
            leaf,
          });
        }
      };

      // Before guardrails and the cache, after validation: see STAGES.beforeRequest.LIMIT.
      api.hooks.beforeRequest.tapPromise({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.LIMIT }, async (ctx) => {
        let set: LimitPolicySet | null = null;
        const source = opts.useControlPlane ? stored() : null;
        if (source !== null) {
          const got = source.policies(ctx);
          set = typeof (got as Promise<LimitPolicySet>).then === 'function' ? await got : (got as LimitPolicySet);
        }
        const dynamic = set === null || set.policies.length === 0 ? NO_POLICIES : compileSet(set);
        if (dynamic.length === 0 && fixedCompiled.length === 0) return undefined;
        // The workspace the request acts in (an organisation key's, too), as the stored policies were found for.
        let workspaceId = set?.workspaceId ?? null;
        if (set === null) {
          const owner = tenant(ctx);
          workspaceId = (typeof owner === 'string' ? owner : await owner) || null;
        }
        const found: { matched: CompiledPolicy[] | null; deferred: CompiledPolicy[] | null } = { matched: null, deferred: null };
        sortPolicies(fixedCompiled, ctx, workspaceId, found);
        sortPolicies(dynamic, ctx, workspaceId, found);
        if (found.deferred !== null) ctx.set(DEFERRED, { workspaceId, policies: found.deferred });
        if (found.matched !== null) await check(ctx, workspaceId, found.matched, null);
        return undefined;
      });

      // A policy that holds for some targets only is checked when one of them is called: outside the retries, once per target.
      api.addInterceptor(
        PLUGIN_NAME,
        (next) => (ctx, target) => {
          const deferred = ctx.get(DEFERRED);
          if (deferred === undefined || ctx.leafTarget === null) return next(ctx, target);
          const leaf = ctx.leafTarget;
          const mine = deferred.policies.filter((c) => namesProviderOf(c, leaf));
          if (mine.length === 0) return next(ctx, target);
          const before = ctx.logFields.limit_policy_id;
          return check(ctx, deferred.workspaceId, mine, ctx.targetPath).then(
            () => next(ctx, target),
            (err: unknown) => {
              // A fallback may go on to another target: the refusal's policy is logged only if it is the answer (below).
              const policy = ctx.logFields.limit_policy_id;
              if (before === undefined) delete ctx.logFields.limit_policy_id;
              else ctx.logFields.limit_policy_id = before;
              if (typeof policy === 'string' && typeof (err as GatewayError).code === 'string') {
                let refusals = ctx.get(TARGET_REFUSALS);
                if (refusals === undefined) ctx.set(TARGET_REFUSALS, (refusals = []));
                refusals.push({ error: err as GatewayError, policy });
              }
              throw err;
            },
          );
        },
        STAGES.interceptor.RETRY - 5,
      );
      api.hooks.log.tap({ name: PLUGIN_NAME, stage: STAGES.log.DEFAULT - 1 }, (ctx) => {
        const refusals = ctx.get(TARGET_REFUSALS);
        const error = ctx.error;
        if (refusals === undefined || error === null) return;
        const answer = refusals.find((r) => r.error === error || (r.error.code === error.code && r.error.message === error.message));
        if (answer !== undefined) ctx.logFields.limit_policy_id = answer.policy;
      });

      // Routing asks before it calls: a target whose own budget or rate limit cannot take the request is skipped.
      const targetLimits: TargetLimitsService = {
        blocked(ctx, targets) {
          const deferred = ctx.get(DEFERRED);
          if (deferred === undefined || store === null) return targets.map(() => null);
          const now = clock();
          return Promise.all(
            targets.map(async (t): Promise<TargetBlock | null> => {
              if (Array.isArray(t.targets)) return null;
              const mine = deferred.policies.filter((c) => namesProviderOf(c, t));
              if (mine.length === 0) return null;
              try {
                const { items, states } = itemsOf(ctx, mine, deferred.workspaceId, now);
                const denied = await store!.peek(items, now);
                if (denied === -1) return null;
                const s = states[denied]!;
                return { reason: s.policy.kind === 'rate' ? 'rate_limited' : 'budget_spent', until: s.resetAt, policy: s.policy.id };
              } catch (err) {
                // The target's own check, when it is called, refuses or answers for the store as the request's would.
                if ((err as GatewayError).code === undefined) storeDown(err);
                return null;
              }
            }),
          );
        },
      };
      api.provide(TARGET_LIMITS, targetLimits);
      // A realtime session charges its usage as its responses end; the request settles to the whole of it when logged.
      api.provide(SESSION_LIMITS, {
        charge(ctx, used) {
          const held = ctx.get(HELD);
          if (held === undefined || store === null) return Promise.resolve(null);
          return chargeSession(ctx, held, used, { store, clock, reservationTtlMs: holdMs(ctx), storeDown, refuse: refusalOf });
        },
      });

      /** The target path whose answer went back: the last one called. */
      const answeredBy = (ctx: RequestContext): string | null => ctx.attempts[ctx.attempts.length - 1]?.target ?? null;

      /**
       * The real amount of each hold: 0 for a cache hit, an answer without usage (a release), a stream's
       * extra draw (the first hold carries the real amount), or a target that did not answer.
       */
      const actualOf = (ctx: RequestContext, held: Held): number[] => {
        const hit = ctx.cacheStatus === 'HIT' || ctx.cacheStatus === 'SEMANTIC HIT';
        if (hit) return held.entries.map(() => 0);
        const s = requestSummary(ctx, { pricing, wantText: false });
        const tokens = s.usage?.total_tokens ?? 0;
        const answered = answeredBy(ctx);
        // A stream continued by other calls (stream recovery): a target's own policies are charged what it served.
        const segments = ctx.get(USAGE_SEGMENTS);
        const charged = new Set<string>();
        return held.entries.map((e) => {
          if (e.extra) return 0;
          if (e.leaf !== null && segments !== undefined && segments.length > 0) {
            // A target called again for a continuation held its policies twice: the first hold takes what it served.
            const once = `${e.policy.id}|${e.leaf}|${e.kind}`;
            if (charged.has(once)) return 0;
            charged.add(once);
            return servedBy(e, segments, s);
          }
          if (e.leaf !== null && e.leaf !== answered) return 0;
          if (e.kind === 'tokens') return tokens;
          if (s.cost !== null) return nanoUsd(s.cost);
          if (s.usage !== null && e.price !== null) return usageNanoUsd(e.price, s.usage, s.multiplier);
          if (s.usage !== null) unpriced(s.modelAnswered ?? ctx.model ?? '(none)');
          return 0;
        });
      };

      /** What the calls of a continued stream that `e`'s target answered cost it: their tokens, or their priced cost. */
      const servedBy = (e: Held['entries'][number], segments: readonly UsageSegment[], s: RequestSummary): number => {
        let amount = 0;
        segments.forEach((seg, i) => {
          if (seg.target !== e.leaf) return;
          if (e.kind === 'tokens') amount += seg.usage.total_tokens;
          else {
            const cost = s.price?.segments?.[i]?.cost ?? null;
            if (cost !== null) amount += nanoUsd(cost);
            else if (e.price !== null) amount += usageNanoUsd(e.price, seg.usage, s.multiplier);
          }
        });
        return amount;
      };

      // A stream that runs past what it reserved draws more as it goes, and is cut when a budget has no more to give.
      api.hooks.afterResponse.tapPromise({ name: PLUGIN_NAME, stage: STAGES.afterResponse.GUARD }, async (response, ctx) => {
        const held = ctx.get(HELD);
        if (held === undefined || store === null || response.status < 200 || response.status >= 300) return response;
        // A cache hit costs nothing: nothing to cap.
        if (ctx.cacheStatus === 'HIT' || ctx.cacheStatus === 'SEMANTIC HIT') return response;
        const control = streamControl(ctx, response);
        if (control !== null) control.watch(streamBudget(held, ctx.targetPath, { store, clock, reservationTtlMs: opts.reservationTtlMs, storeDown, refuse: refusalOf }));
        return response;
      });

      // After the log sinks (their summary is reused), once the answer ended: streams, clients that left and failures alike.
      api.hooks.log.tap({ name: PLUGIN_NAME, stage: STAGES.log.SETTLE }, (ctx) => {
        const held = ctx.get(HELD);
        if (held === undefined || store === null) return;
        let actual: number[];
        try {
          actual = actualOf(ctx, held);
        } catch (err) {
          api.logger.error({ err, trace_id: ctx.traceId }, 'limits: reading a request\'s usage failed; its reservations are released');
          actual = held.entries.map(() => 0);
        }
        const settling = store.settle(held.entries.map((e) => e.hold), actual, clock()).catch(storeDown);
        pending.add(settling);
        void settling.finally(() => pending.delete(settling));
      });

      const counters: LimitCounters = {
        async usage(policy) {
          if (store === null) throw new Error('the limits store is not open yet');
          const t = clock();
          const w = windowOf(policy, t);
          const scale = policy.kind === 'usage' && policy.type === 'cost' ? NANO : 1;
          const groups = (await store.read(w.bucket, t))
            .map((g) => ({ group: groupObject(policy, g.group), used: g.used / scale, reserved: g.reserved / scale }))
            .sort((a, b) => b.used + b.reserved - (a.used + a.reserved));
          return { start: w.start, end: w.end, groups };
        },
      };
      const stored = storedPolicies(api, counters);

      // Settles still in flight are finished before the store closes (a memory store then saves its counters).
      api.onClose(async () => {
        await Promise.allSettled([...pending]);
        await store?.close();
      });
    },
  };
}

/** The policies of `list` that hold for a request: for the whole request, or (a provider some targets use) for some of its targets. */
function sortPolicies(list: readonly CompiledPolicy[], ctx: RequestContext, workspaceId: string | null, found: { matched: CompiledPolicy[] | null; deferred: CompiledPolicy[] | null }): void {
  for (const c of list) {
    if (!c.matches(ctx, workspaceId)) continue;
    // A policy on some of the targets only: checked when one of them is called.
    if (holdsForSomeTargets(c, ctx.target)) (found.deferred ??= []).push(c);
    else (found.matched ??= []).push(c);
  }
}

export default limits;
