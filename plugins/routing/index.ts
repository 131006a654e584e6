import * as v from 'valibot';
import {
  redisConnectionOf,
  contentText,
  credentialDigest,
  DEADLINE,
  DEADLINE_ERROR,
  defineErrors,
  estimateRequestPromptTokens,
  fieldSchema as f,
  GatewayError,
  isEventStream,
  isObject,
  parseOptions,
  pickWeighted,
  ROUTING,
  TARGET_LIMITS,
  weightOf,
  STAGES,
  stateKey,
  childPath,
  targetIdentity,
  TENANCY,
  tenantOf,
  type GatewayPlugin,
  type GatewayResponse,
  type RequestContext,
  type RoutePlan,
  type RoutingService,
  type Target,
  type TargetLimitsService,
  type TargetField,
} from '../../sdk/index.js';
import { fastest, outOfHeadroom, rendezvous, type Out, type SkipReason } from './choose.js';
import { headroomOf } from './headers.js';
import { memoryRouteState, redisRouteState, type RouteStateStore, type TargetState } from './state.js';

export const PLUGIN_NAME = 'routing';

/** The header giving a request's deadline in ms (like the config's `deadline`, which it overrides). */
export const DEADLINE_HEADER = 'x-gateway-deadline';
/** Longest deadline taken: a day. */
const MAX_DEADLINE_MS = 86_400_000;

const AffinitySchema = f.strictObject({
  /** What keeps requests together: a request header, the end user (`metadata.user`, the body's `user`), or the prompt's stable prefix. */
  key: f.oneOf(['header', 'user', 'prefix'] as const),
  /** `key: header`: which one. Default `x-session-id`. */
  header: v.optional(f.string()),
  /** `key: prefix`: how many characters of the system prompt and first user message make the key. Default 4096. */
  prefix_chars: v.optional(f.integer(16, 1_000_000)),
});

/**
 * The config fields this plugin reads: `routing` on a loadbalance or fallback target (how its targets
 * are chosen) and `deadline` (ms) on the top level (the whole request's time).
 */
export const ROUTING_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  routing: {
    schema: f.strictObject({
      /** Skip targets whose rate-limit headroom (from their answers' headers) cannot take the request. Default true. */
      headroom: v.optional(f.boolean()),
      /** loadbalance: `weight` (the weights alone) or `latency` (the fastest healthy targets, by weight among equals). */
      prefer: v.optional(f.oneOf(['weight', 'latency'] as const)),
      /** loadbalance: keep requests that share a key on one target while it can take them (providers' prompt caches hit). */
      affinity: v.optional(AffinitySchema),
    }),
    affectsAnswer: false,
    combination: ['routing'],
  },
  deadline: { schema: f.integer(1, MAX_DEADLINE_MS), affectsAnswer: false, combination: ['deadline'] },
});

const routingError = defineErrors({
  targets_exhausted: { status: 429, type: 'rate_limit_error' },
  ...DEADLINE_ERROR,
});
export const ROUTING_ERRORS = routingError.codes;

const OptionsSchema = v.strictObject({
  /** Where target state lives: `memory` (this instance) or `redis` (shared; needs the `redis` store plugin). */
  store: v.optional(v.picklist(['memory', 'redis'], 'must be memory or redis'), 'memory'),
  /** The store plugin holding the Redis connection. */
  connection: v.optional(v.pipe(v.string(), v.minLength(1)), 'redis'),
});

export type RoutingOptions = v.InferInput<typeof OptionsSchema> & {
  /** Clock in epoch ms (rate-limit resets); replace it in tests. */
  now?: () => number;
};

interface RoutingConfig {
  headroom?: boolean;
  prefer?: 'weight' | 'latency';
  affinity?: { key: 'header' | 'user' | 'prefix'; header?: string; prefix_chars?: number };
}

/** One strategy's decision, as the log, the trace and the dashboard show it. */
export interface RouteDecision {
  /** The strategy target's path (`''` for the top level). */
  at: string;
  mode: 'loadbalance' | 'fallback';
  /** Paths of the targets considered. */
  considered: string[];
  /** `until`: when it can again (absent for a budget that never resets); `policy`: the limit policy that blocks it. */
  skipped: Array<{ target: string; reason: SkipReason; until?: string; policy?: string }>;
  /** Loadbalance: the path chosen; fallback: the order it will try. */
  chosen: string[];
  /** With affinity: whether the session's own target took it (`hit`), or another because its own could not (`miss`). */
  affinity: 'hit' | 'miss' | null;
  prefer: 'weight' | 'latency';
}

/** The decisions of a request (a nested strategy adds its own). */
const DECISIONS = stateKey<RouteDecision[]>(`${PLUGIN_NAME}:decisions`);
/** Each routed leaf's identity by its path, for the attempt that calls it to record what it learns. */
const KEYS = stateKey<Map<string, string>>(`${PLUGIN_NAME}:keys`);

/** The store entry a `redis` store plugin registers. */
/**
 * Routing that knows the providers' state (docs/configuration.md#routing). Every answer of a routed
 * target teaches its headroom (rate-limit headers, `retry-after`) and speed (time to headers and to a
 * stream's first chunk) to a store shared by the instances (memory, or Redis); loadbalance and
 * fallback ask this plugin's `ROUTING` service which targets can take a request now, which are
 * fastest, and which one a conversation belongs to. `deadline` bounds the whole request: retries,
 * fallbacks, their waits and each attempt's timeout draw from it.
 */
export function routing(options: RoutingOptions = {}): GatewayPlugin {
  const { now: clock = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  return {
    name: PLUGIN_NAME,
    targetFields: ROUTING_FIELDS,
    errorCodes: ROUTING_ERRORS,
    provides: [ROUTING],
    // The limits plugin's policies that name a target's provider: a target whose budget is spent is skipped.
    uses: [TARGET_LIMITS, TENANCY],
    state: [
      { name: 'target-state', scope: 'workspace', keyedBy: "What each target's answers taught (rate-limit headroom, retry-after, latency) and the sessions kept on one: keyed by the workspace the request acts in and the target as resolved (provider, host, model, credential digest), never by a slug's name." },
    ],
    apply(api) {
      let targetLimits: TargetLimitsService | undefined;
      api.onReady(() => {
        targetLimits = api.tryResolve(TARGET_LIMITS);
      });
      let store: RouteStateStore = memoryRouteState(clock);
      if (opts.store === 'redis') {
        api.onReady(() => {
          store = redisRouteState(redisConnectionOf(api, opts.connection, PLUGIN_NAME));
        });
      }
      let warnedAt = -Infinity;
      const storeDown = (err: unknown) => {
        if (clock() - warnedAt < 60_000) return;
        warnedAt = clock();
        api.logger.warn({ err: (err as Error)?.message ?? String(err) }, 'routing: the target state store is unreachable; strategies use their weights and order alone');
      };
      // A target as the breaker knows it: every config of a workspace naming the same deployment shares what is known of it.
      const credentials = credentialDigest([...api.targetFields.credentials()]);
      const identity = (ctx: RequestContext, target: Target, ws: string): string => targetIdentity(ctx, target, credentials, ws);
      const tenant = tenantOf(api);

      const service: RoutingService = {
        async plan(ctx, parent, targets, path, mode, random) {
          const config = (parent.routing ?? {}) as RoutingConfig;
          const leaves: number[] = [];
          const weights = targets.map((t) => (mode === 'fallback' ? 1 : weightOf(t)));
          // Each leaf as it will be called, in the workspace the request acts in: what is known of a target is
          // known of that deployment, never of a slug's name (two workspaces' `@main` are different ones).
          const owner = tenant(ctx);
          const ws = typeof owner === 'string' ? owner : await owner;
          const keys = await Promise.all(
            targets.map((t, i) => {
              if (Array.isArray(t.targets) || weights[i]! <= 0) return null;
              // A leaf that does not resolve (an unknown slug) has no state: its call answers the refusal.
              return api.resolveLeaf(ctx, t).then(
                (resolved) => identity(ctx, resolved, ws),
                () => null,
              );
            }),
          );
          keys.forEach((k, i) => k !== null && leaves.push(i));
          let states: Array<TargetState | null> = targets.map(() => null);
          try {
            const read = await store.read(leaves.map((i) => keys[i]!));
            leaves.forEach((i, k) => (states[i] = read[k]!));
          } catch (err) {
            storeDown(err);
            states = targets.map(() => null);
          }
          const t = clock();
          const tokens = requestTokens(ctx);
          const outs: Array<Out | null> = targets.map((_, i) => (config.headroom === false || keys[i] === null ? null : outOfHeadroom(states[i]!, tokens, t)));
          if (targetLimits !== undefined) {
            const got = targetLimits.blocked(ctx, targets);
            const blocks = Array.isArray(got) ? got : await got;
            blocks.forEach((b, i) => {
              if (b !== null && outs[i] === null && weights[i]! > 0) outs[i] = { reason: b.reason, until: b.until ?? Infinity, policy: b.policy };
            });
          }
          const decision: RouteDecision = {
            at: path,
            mode,
            considered: [],
            skipped: [],
            chosen: [],
            affinity: null,
            prefer: config.prefer ?? 'weight',
          };
          const usable: number[] = [];
          targets.forEach((_, i) => {
            if (weights[i]! <= 0) return;
            const child = childPath(path, i);
            decision.considered.push(child);
            const out = outs[i];
            if (out === null || out === undefined) usable.push(i);
            else decision.skipped.push({ target: child, reason: out.reason, ...(Number.isFinite(out.until) ? { until: new Date(out.until).toISOString() } : {}), ...(out.policy === undefined ? {} : { policy: out.policy }) });
          });
          let decisions = ctx.get(DECISIONS);
          if (decisions === undefined) ctx.set(DECISIONS, (decisions = []));
          decisions.push(decision);
          ctx.logFields.routing = decisions;
          if (usable.length === 0) return { order: [], exhausted: exhausted(decision, outs, t) };
          let order: number[];
          if (mode === 'fallback') {
            order = usable;
          } else {
            const session = config.affinity === undefined ? null : sessionKey(ctx, config.affinity);
            if (session !== null) {
              // Ranked over every target by weight, so a session keeps its target whichever others are out.
              const ranked = rendezvous(session, targets.map((tt, i) => keys[i] ?? `nested:${i}`), weights);
              const pick = ranked.find((i) => usable.includes(i))!;
              decision.affinity = pick === ranked[0] ? 'hit' : 'miss';
              order = [pick];
            } else {
              let pool = usable;
              if (config.prefer === 'latency') {
                const quick = fastest(usable.map((i) => states[i]?.latencyMs));
                pool = usable.filter((_, k) => quick[k]);
                for (const i of usable) if (!pool.includes(i)) decision.skipped.push({ target: childPath(path, i), reason: 'slower' });
              }
              order = [pool[pickWeighted(pool.map((i) => weights[i]!), random())]!];
            }
          }
          decision.chosen = order.map((i) => childPath(path, i));
          let known = ctx.get(KEYS);
          if (known === undefined) ctx.set(KEYS, (known = new Map()));
          for (const i of order) if (keys[i] !== null) known.set(childPath(path, i), keys[i]!);
          // The chosen target's headroom is spent by this request until its answer says better (other requests see it).
          // Awaited, so a request another instance routes next already sees it.
          if (mode === 'loadbalance' && keys[order[0]!] !== null && config.headroom !== false) await store.take(keys[order[0]!]!, tokens).catch(storeDown);
          return { order, exhausted: null } satisfies RoutePlan;
        },
        typicalLatencyMs(ctx) {
          const key = ctx.targetPath === null ? undefined : ctx.get(KEYS)?.get(ctx.targetPath);
          return key === undefined ? null : (latest.get(key) ?? null);
        },
      };
      api.provide(ROUTING, service);
      /** The last known average latency per identity, for `typicalLatencyMs` (synchronous: no store read on the retry path). */
      const latest = new Map<string, number>();

      // Every attempt of a routed target teaches its headroom and speed.
      api.addInterceptor(
        PLUGIN_NAME,
        (next) => (ctx, target) => {
          const key = ctx.targetPath === null ? undefined : ctx.get(KEYS)?.get(ctx.targetPath);
          return key === undefined ? next(ctx, target) : learn(next(ctx, target), ctx, key);
        },
        STAGES.interceptor.DEFAULT,
      );
      const learn = async (answer: Promise<GatewayResponse>, ctx: RequestContext, key: string): Promise<GatewayResponse> => {
        const started = performance.now();
        // No answer (an error) teaches nothing: no headroom, and its time is no latency sample (a timeout would skew it).
        const response = await answer;
        // A socket session (realtime) answers when it ends: its speed is its handshake's, which its attempt recorded.
        const latency = ctx.upgrade?.taken === true ? (ctx.attempts.at(-1)?.latencyMs ?? 0) : performance.now() - started;
        const headroom = headroomOf(response.status, response.headers, clock());
        const ok = response.status >= 200 && response.status < 300;
        if (ok) {
          const old = latest.get(key);
          latest.set(key, old === undefined ? latency : old + 0.2 * (latency - old));
          if (latest.size > 10_000) latest.delete(latest.keys().next().value!);
        }
        // Awaited: the next request, on this instance or another, routes on what this answer said.
        await store.record(key, headroom, ok ? latency : null, null).catch(storeDown);
        if (!ok || !isEventStream(response)) return response;
        // A stream's time to its first chunk, seen as it goes out.
        let first = true;
        const observer = {
          onChunk() {
            if (!first) return;
            first = false;
            store.record(key, null, null, performance.now() - started).catch(storeDown);
          },
        };
        response.observers = response.observers === null ? [observer] : [...response.observers, observer];
        return response;
      };

      // The deadline starts at the request's arrival: set before anything else spends it.
      api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.PREPARE - 1 }, (ctx) => {
        const header = ctx.header(DEADLINE_HEADER);
        let ms: number | undefined;
        if (header !== undefined && header !== '') {
          ms = Number(header);
          if (!Number.isInteger(ms) || ms < 1 || ms > MAX_DEADLINE_MS) {
            throw new GatewayError('invalid_header', `${DEADLINE_HEADER} must be a whole number of milliseconds from 1 to ${MAX_DEADLINE_MS}.`, { param: DEADLINE_HEADER });
          }
        } else if (typeof ctx.target?.deadline === 'number') {
          ms = ctx.target.deadline;
        }
        if (ms !== undefined) ctx.set(DEADLINE, { ms, at: ctx.startedAt + ms });
        return undefined;
      });
    },
  };
}

/** The 429 when no target can take the request: when the earliest one can again. */
function exhausted(decision: RouteDecision, outs: ReadonlyArray<Out | null>, now: number): GatewayError {
  let earliest = Infinity;
  for (const o of outs) if (o !== null && o.until < earliest) earliest = o.until;
  const why = decision.skipped.map((s) => `${s.target}: ${s.reason.replace('_', ' ')}${s.policy === undefined ? '' : ` (policy ${s.policy})`}`).join('; ');
  // Every target's budget spent for good: no time to wait for.
  if (!Number.isFinite(earliest)) {
    return new GatewayError('targets_exhausted', `No target of the ${decision.mode} can take this request (${why}), and none resets by itself.`, { spec: ROUTING_ERRORS.targets_exhausted });
  }
  const seconds = Math.max(1, Math.ceil((earliest - now) / 1000));
  return new GatewayError('targets_exhausted', `No target of the ${decision.mode} can take this request now (${why}); the earliest can again in ${seconds} s.`, {
    spec: ROUTING_ERRORS.targets_exhausted,
    headers: { 'retry-after': String(seconds) },
  });
}

/** Tokens a request may spend, as providers count it against a bucket: its prompt and its output bound. */
function requestTokens(ctx: RequestContext): number {
  const body = ctx.body;
  const bound = body?.max_completion_tokens ?? body?.max_tokens ?? body?.max_output_tokens;
  return estimateRequestPromptTokens(ctx) + (typeof bound === 'number' && bound > 0 ? bound : 0);
}

/** The key a request's conversation is kept together by, or null when it has none. */
function sessionKey(ctx: RequestContext, affinity: NonNullable<RoutingConfig['affinity']>): string | null {
  const body = ctx.body;
  if (affinity.key === 'header') {
    const value = ctx.header(affinity.header?.toLowerCase() ?? 'x-session-id');
    return value === undefined || value === '' ? null : `h:${value}`;
  }
  if (affinity.key === 'user') {
    const user = ctx.metadata?.user ?? body?.user ?? (isObject(body?.metadata) ? body.metadata.user_id : undefined);
    return typeof user === 'string' && user !== '' ? `u:${user}` : null;
  }
  if (body === null) return null;
  // The stable start of a conversation: its system prompt (or instructions) and first user message, which every later turn repeats.
  let prefix = typeof body.instructions === 'string' ? body.instructions : contentText(body.system);
  const messages = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (const m of messages as Array<Record<string, unknown>>) {
    if (m?.role === 'system' || m?.role === 'developer') prefix += `\n${contentText(m.content)}`;
    else if (m?.role === 'user') {
      prefix += `\n${contentText(m.content)}`;
      break;
    }
  }
  if (typeof body.input === 'string') prefix += `\n${body.input}`;
  if (prefix === '') return null;
  return `p:${prefix.slice(0, affinity.prefix_chars ?? 4096)}`;
}

export default routing;
