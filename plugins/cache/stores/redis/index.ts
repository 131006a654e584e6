import * as v from 'valibot';
import { type GatewayPlugin, type Logger, parseOptions, redisConnectionOf, type RedisConnection } from '../../../../sdk/index.js';
import { STORE_NAMES, type CacheCandidate, type CachedAnswer, type CacheStore } from '../../types.js';
import { rateLimitedWarning } from '../../warn.js';

export const PLUGIN_NAME = 'cache-redis';

const OptionsSchema = v.strictObject({
  /** Name of the store plugin holding the shared connection (`{ client, prefix }`), normally `redis`. */
  connection: v.optional(v.pipe(v.string(), v.minLength(1)), 'redis'),
  /** At most one "cache store unavailable" warning per this many ms. */
  warnIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 60_000),
});

export type RedisCacheStoreOptions = v.InferInput<typeof OptionsSchema> & {
  /** Clock in ms for the warning interval; replace it in tests. */
  now?: () => number;
};

/** The entry the `redis` store plugin registers. */
// Head insert, trim to the cap, and keep the list alive as long as its longest-lived candidate: one round trip, atomic.
const ADD_CANDIDATE = `
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`;

/** `expiresAt|createdAt|key|base64(float32 vector)`: keys are hex, so `|` never occurs before the vector. */
export function encodeCandidate(c: CacheCandidate): string {
  return `${c.expiresAt}|${c.createdAt}|${c.key}|${Buffer.from(c.vector.buffer, c.vector.byteOffset, c.vector.byteLength).toString('base64')}`;
}

export function decodeCandidate(text: string): CacheCandidate | null {
  const a = text.indexOf('|');
  const b = text.indexOf('|', a + 1);
  const c = text.indexOf('|', b + 1);
  if (a === -1 || b === -1 || c === -1) return null;
  const bytes = Buffer.from(text.slice(c + 1), 'base64');
  if (bytes.length === 0 || bytes.length % 4 !== 0) return null;
  // Copy into an aligned buffer: a Float32Array view needs a 4-byte-aligned offset.
  const vector = new Float32Array(bytes.length / 4);
  new Uint8Array(vector.buffer).set(bytes);
  return { expiresAt: Number(text.slice(0, a)), createdAt: Number(text.slice(a + 1, b)), key: text.slice(b + 1, c), vector };
}

/**
 * A cache store in Redis, shared by every gateway instance using the same
 * connection prefix. Layout (prefix from the `redis` store plugin):
 * - `<prefix>cache:e:<key>`: string, the answer as JSON; `SET … PX ttl`.
 * - `<prefix>cache:v:<scope>`: list of semantic candidates, newest first,
 *   capped by `LTRIM` at the semantic mode's `maxCandidates`; expires with its
 *   longest-lived member.
 * Every command fails fast while Redis is down (the connection has no offline
 * queue): a read is then a miss, a write is dropped, and one warning is
 * logged per `warnIntervalMs`. The request never fails because of it.
 */
export function redisCacheStore(connection: () => RedisConnection, logger: Logger, options: RedisCacheStoreOptions = {}): CacheStore {
  const { now = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const degraded = rateLimitedWarning(logger, 'cache store redis unavailable; cache reads are misses and writes are dropped', opts.warnIntervalMs, now);
  const entryKey = (c: RedisConnection, key: string) => `${c.prefix}cache:e:${key}`;
  const scopeKey = (c: RedisConnection, scope: string) => `${c.prefix}cache:v:${scope}`;
  return {
    name: STORE_NAMES.redis,
    async get(key) {
      let text: string | null;
      try {
        const c = connection();
        text = await c.client.get(entryKey(c, key));
      } catch (err) {
        degraded(err);
        return null;
      }
      if (text === null) return null;
      try {
        const answer = JSON.parse(text) as CachedAnswer;
        return answer.v === 1 ? answer : null;
      } catch {
        return null;
      }
    },
    async set(key, answer, ttlMs) {
      if (ttlMs <= 0) return;
      try {
        const c = connection();
        await c.client.set(entryKey(c, key), JSON.stringify(answer), 'PX', Math.ceil(ttlMs));
      } catch (err) {
        degraded(err);
      }
    },
    async candidates(scope, limit) {
      let items: string[];
      try {
        const c = connection();
        items = await c.client.lrange(scopeKey(c, scope), 0, limit - 1);
      } catch (err) {
        degraded(err);
        return [];
      }
      const out: CacheCandidate[] = [];
      for (const item of items) {
        const candidate = decodeCandidate(item);
        if (candidate !== null) out.push(candidate);
      }
      return out;
    },
    async addCandidate(scope, candidate, limit, ttlMs) {
      if (ttlMs <= 0) return;
      try {
        const c = connection();
        await c.client.eval(ADD_CANDIDATE, 1, scopeKey(c, scope), encodeCandidate(candidate), limit, Math.ceil(ttlMs));
      } catch (err) {
        degraded(err);
      }
    },
  };
}

/**
 * Registers the Redis cache store as `cache-redis` in `api.stores`; pick it
 * with the cache plugin's `store: "redis"`. Needs the `redis` store plugin
 * (the shared connection, `REDIS_URL`).
 */
export function cacheRedis(options: RedisCacheStoreOptions = {}): GatewayPlugin {
  // Validated here too, so a bad option fails at start-up, not at the first request.
  const { now: _now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  return {
    name: PLUGIN_NAME,
    state: [
      { name: 'entries', scope: 'workspace', keyedBy: "The cache modes' answers and vectors in Redis, under the keys they give (each holds the workspace)." },
    ],
    apply(api) {
      let conn: RedisConnection | null = null;
      const connection = () => {
        if (conn === null) throw new Error(`cache-redis: store "${opts.connection}" is not ready`);
        return conn;
      };
      api.stores.add(STORE_NAMES.redis, redisCacheStore(connection, api.logger, options));
      api.onReady(() => {
        // Each cache key is read and written on its own (one key a command or script), so on a Redis Cluster the
        // entries spread over every primary.
        conn = redisConnectionOf(api, opts.connection, PLUGIN_NAME);
      });
    },
  };
}

export default cacheRedis;
