import * as v from 'valibot';
import { isObject, extractUsage, fieldSchema as f, parseOptions, STAGES, type GatewayPlugin, type GatewayResponse, type RequestContext, type RouteDefinition, type TargetField, routeApi, stateKey, TENANCY, tenantOf } from '../../sdk/index.js';
import { assembleStream } from './assemble.js';
import { captureObserver } from './capture.js';
import { createTargetIdentity, exactKey, identityFields, partitionOf, REFRESH_HEADER, resolvedTree, STATUS_HEADER } from './key.js';
import { jsonHit, streamHit } from './replay.js';
import { memoryCacheStore } from './stores/memory/index.js';
import { CACHEABLE_ROUTES, STORE_NAMES, type CachedAnswer, type CacheLookup, type CacheMode, type CacheStatus, type CacheStore } from './types.js';
import { rateLimitedWarning } from './warn.js';

export const PLUGIN_NAME = 'cache';

/** `max_age` when a config's `cache` gives none, in seconds (1 hour). */
export const DEFAULT_MAX_AGE = 3600;
/** Longest `max_age` honoured, in seconds (7 days); a larger value is lowered to it. */
export const MAX_AGE_CAP = 7 * 24 * 3600;
/** Largest answer stored, in bytes (JSON text, or the SSE bytes of a stream before assembly). */
export const DEFAULT_MAX_ENTRY_BYTES = 4 * 1024 * 1024;

const seconds = (min: number) => v.pipe(v.number(), v.integer(), v.minValue(min, `must be an integer of at least ${min}`));

const OptionsSchema = v.pipe(
  v.strictObject({
    /** Where answers live: `memory` (store plugin `cache-memory`, or a default one) or `redis` (store plugin `cache-redis`). */
    store: v.optional(v.picklist(['memory', 'redis'], 'must be memory or redis'), 'memory'),
    /** Seconds an answer is kept when the config's `cache` has no `max_age`. */
    defaultMaxAge: v.optional(seconds(1), DEFAULT_MAX_AGE),
    /** Upper bound of `max_age`, in seconds. */
    maxAgeCap: v.optional(seconds(1), MAX_AGE_CAP),
    /** Answers larger than this many bytes are not stored. */
    maxEntryBytes: v.optional(seconds(1), DEFAULT_MAX_ENTRY_BYTES),
    /** At most one warning per this many ms when a cache mode or store fails unexpectedly. */
    warnIntervalMs: v.optional(seconds(0), 60_000),
  }),
  v.check((o) => o.defaultMaxAge <= o.maxAgeCap, 'defaultMaxAge must not exceed maxAgeCap'),
);

export type CacheOptions = v.InferInput<typeof OptionsSchema> & {
  /** Clock in epoch ms (entry ages, expiry); replace it in tests. */
  now?: () => number;
};

/** The config field this plugin reads: `cache` (`mode` picks a cache mode plugin), inherited by every target that sets none. */
export const CACHE_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  cache: {
    schema: f.strictObject({ mode: f.oneOf(['simple', 'semantic']), max_age: v.optional(f.integer(0)) }),
    inherit: 'always',
    affectsAnswer: false,
    combination: ['cache'],
  },
});

/** A miss waiting for its answer, kept on the request under {@link PENDING}. */
interface Pending {
  lookup: CacheLookup;
  mode: CacheMode;
  maxAgeMs: number;
}
const PENDING = stateKey<Pending>(PLUGIN_NAME);

/**
 * The response cache for chat completions, completions and embeddings.
 *
 * A request whose target (the root of its config; children inherit it)
 * has `cache: { mode, max_age }` is looked up through the cache mode
 * registered under `mode` (`cache-simple`, `cache-semantic`) in the chosen
 * store. A hit answers at once (JSON, or an SSE replay for `stream: true`); a
 * miss goes upstream and its 2xx answer is captured as it goes out and stored
 * once it completed. `x-gateway-cache-status` (and `ctx.cacheStatus`) says
 * which: HIT, SEMANTIC HIT, MISS, REFRESH, or DISABLED for a cacheable
 * request without cache settings. See docs/caching.md.
 */
export function cache(options: CacheOptions = {}): GatewayPlugin {
  const { now = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  return {
    name: PLUGIN_NAME,
    // The workspace a request acts in, which its state is kept under (sdk/tenancy.ts).
    uses: [TENANCY],
    targetFields: CACHE_FIELDS,
    state: [
      { name: 'entries', scope: 'workspace', keyedBy: 'Cached answers: keyed by the workspace the request acts in (for every kind of key), the route, the target tree as resolved, the namespace and the body.' },
    ],
    apply(api) {
      let store: CacheStore | null = null;
      const identity = createTargetIdentity(identityFields(api.targetFields));
      const tenant = tenantOf(api);
      const modes = new Map<string, CacheMode>();
      const failed = rateLimitedWarning(api.logger, 'cache lookup or save failed; treated as a miss', opts.warnIntervalMs, now);
      const unknownModes = new Set<string>();

      api.onReady(() => {
        const name = STORE_NAMES[opts.store];
        const registered = api.stores.get(name) as CacheStore | undefined;
        if (registered !== undefined) store = registered;
        else if (opts.store === 'memory') store = memoryCacheStore({ now });
        else throw new Error(`${PLUGIN_NAME}: store "redis" needs the ${name} plugin (and the redis store plugin)`);
        for (const mode of api.cacheModes.names()) modes.set(mode, api.cacheModes.get(mode) as CacheMode);
        if (modes.size === 0) api.logger.warn('cache: no cache mode is loaded (cache-simple, cache-semantic); every request is DISABLED');
      });

      const setStatus = (ctx: RequestContext, status: CacheStatus) => {
        ctx.cacheStatus = status;
        ctx.responseHeaders[STATUS_HEADER] = status;
      };

      const lookupRequest = async (ctx: RequestContext): Promise<GatewayResponse | undefined> => {
        const target = ctx.target;
        if (target === null) return undefined;
        const settings = target.cache;
        if (!isObject(settings) || typeof settings.mode !== 'string') {
          setStatus(ctx, 'DISABLED');
          return undefined;
        }
        const mode = modes.get(settings.mode);
        if (mode === undefined) {
          if (!unknownModes.has(settings.mode)) {
            unknownModes.add(settings.mode);
            api.logger.warn({ mode: settings.mode }, 'cache: a config asks for a cache mode that is not loaded; those requests are DISABLED');
          }
          setStatus(ctx, 'DISABLED');
          return undefined;
        }
        const maxAge = typeof settings.max_age === 'number' && settings.max_age >= 0 ? Math.min(settings.max_age, opts.maxAgeCap) : opts.defaultMaxAge;
        const maxAgeMs = maxAge * 1000;
        const t = now();
        const route = routeApi(ctx.route!);
        const stream = ctx.stream;
        const includeUsage = stream && isObject(ctx.body?.stream_options) && ctx.body.stream_options.include_usage === true;
        // What the request will call, in the workspace it acts in: a slug each workspace names alike is two caches.
        const owner = tenant(ctx);
        const called = await resolvedTree(target, (leaf) => api.resolveLeaf(ctx, leaf));
        const partition = partitionOf(ctx, called, identity, typeof owner === 'string' ? owner : await owner);
        const lookup: CacheLookup = {
          ctx,
          store: store!,
          key: exactKey(partition, ctx.body),
          partition,
          now: t,
          scratch: null,
          serve(answer: CachedAnswer) {
            if (answer.v !== 1 || answer.route !== route) return null;
            if (t >= answer.expiresAt || t - answer.createdAt >= maxAgeMs) return null;
            if (stream) return streamHit(answer, includeUsage);
            // Assembled from a stream the client asked no usage for: a JSON answer would lack it.
            if (answer.fromStream && answer.usage === null) return null;
            return jsonHit(answer);
          },
        };
        const refresh = ctx.header(REFRESH_HEADER)?.trim().toLowerCase() === 'true';
        if (!refresh) {
          let hit = null;
          try {
            hit = await mode.lookup(lookup);
          } catch (err) {
            failed(err);
          }
          if (hit !== null) {
            setStatus(ctx, hit.status);
            ctx.usage = hit.answer.usage;
            ctx.provider = null;
            return hit.response;
          }
        }
        setStatus(ctx, refresh ? 'REFRESH' : 'MISS');
        if (maxAgeMs > 0) ctx.set(PENDING, { lookup, mode, maxAgeMs });
        return undefined;
      };

      const save = (pending: Pending, bytes: Buffer, sse: boolean, status: number): void => {
        // A stream the gateway ended early (a guardrail, a budget, a quiet upstream) is not an answer to keep.
        if (pending.lookup.ctx.error !== null) return;
        const route = routeApi(pending.lookup.ctx.route!);
        const text = bytes.toString('utf8');
        const body = sse ? assembleStream(route, text) : text;
        if (body === null || body.charCodeAt(0) !== 123 /* { */) return;
        const key = body.lastIndexOf('"usage"');
        const createdAt = now();
        const answer: CachedAnswer = {
          v: 1,
          route,
          status,
          body,
          // A stream the client asked no usage of carries none; the gateway had it from the upstream all the same.
          usage: (key === -1 ? null : extractUsage(body.slice(key))) ?? pending.lookup.ctx.usage,
          fromStream: sse,
          createdAt,
          expiresAt: createdAt + pending.maxAgeMs,
        };
        pending.mode.save(pending.lookup, answer, pending.maxAgeMs).catch(failed);
      };

      // Late: validation, guardrails and anything else that may refuse or rewrite the request run first,
      // so a hit is never served to a request they would refuse, and the key sees the final body.
      // Only the routes whose answers can be kept (and those that speak their API): the others never pay the lookup's promise.
      const cacheable = (route: RouteDefinition) => CACHEABLE_ROUTES.has(routeApi(route));
      api.hooks.beforeRequest.tapPromise({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.ANSWER, routes: cacheable }, lookupRequest);

      // Late too: the answer seen is the one the client gets, after any other tap replaced or wrapped it.
      api.hooks.afterResponse.tap({ name: PLUGIN_NAME, stage: STAGES.afterResponse.STORE }, (response, ctx) => {
        const pending = ctx.get(PENDING);
        if (pending === undefined || response.status < 200 || response.status >= 300 || response.body === null) return response;
        const type = response.headers['content-type'];
        const contentType = (Array.isArray(type) ? type[0] : type) ?? '';
        const sse = contentType.startsWith('text/event-stream');
        if (!sse && !contentType.includes('json')) return response;
        const status = response.status;
        const observer = captureObserver(opts.maxEntryBytes, (bytes) => {
          try {
            save(pending, bytes, sse, status);
          } catch (err) {
            failed(err);
          }
        });
        response.observers = response.observers === null ? [observer] : [...response.observers, observer];
        return response;
      });
    },
  };
}

export default cache;
