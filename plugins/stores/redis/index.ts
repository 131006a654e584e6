import { Redis } from 'ioredis';
import * as v from 'valibot';
import { type GatewayPlugin, parseOptions } from '../../../sdk/index.js';

export const PLUGIN_NAME = 'redis';

const OptionsSchema = v.strictObject({
  /** Redis URL, e.g. redis://127.0.0.1:6379. */
  url: v.pipe(v.string(), v.minLength(1, 'is required (set REDIS_URL)')),
  /** Prefix of every key this gateway writes; give each deployment (and each test) its own. */
  keyPrefix: v.optional(v.string(), 'gateway:'),
  /** A command without an answer after this many ms fails, so a Redis that hangs (not just one that is down) never holds a request. */
  commandTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 1000),
});

export type RedisStoreOptions = v.InferInput<typeof OptionsSchema>;

/**
 * A shared Redis connection, registered as store `redis` for the plugins that
 * keep shared state (breaker, cache, rate limits). Commands fail fast while
 * Redis is down (no offline queue) or hangs (`commandTimeoutMs`), so callers
 * can degrade instead of queueing requests behind it.
 */
export function redisStore(options: RedisStoreOptions): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const client = new Redis(opts.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: opts.commandTimeoutMs });
      client.on('error', () => undefined); // reported by the callers that degrade; ioredis keeps reconnecting
      api.stores.add(PLUGIN_NAME, { client, prefix: opts.keyPrefix });
      api.onReady(async () => {
        try {
          await client.connect();
        } catch (err) {
          api.logger.warn({ err: (err as Error).message }, 'redis is unreachable at start; shared state degrades until it is back');
        }
      });
      api.onClose(async () => {
        await client.quit().catch(() => client.disconnect());
      });
    },
  };
}

export default redisStore;
