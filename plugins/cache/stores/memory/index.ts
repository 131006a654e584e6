import { LRUCache } from 'lru-cache';
import * as v from 'valibot';
import { type GatewayPlugin, parseOptions } from '../../../../sdk/index.js';
import { STORE_NAMES, type CacheCandidate, type CachedAnswer, type CacheStore } from '../../types.js';

export const PLUGIN_NAME = 'cache-memory';

/** Default bound of the whole store: answers and semantic vectors together. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/** Fixed cost counted per entry on top of its text or vectors (object headers, key, timestamps). */
const ENTRY_OVERHEAD = 256;

const OptionsSchema = v.strictObject({
  /** Upper bound of the store in bytes (approximate: JSON text length plus vector bytes plus a fixed overhead per entry). */
  maxBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024, 'must be at least 1024')), DEFAULT_MAX_BYTES),
});

export type MemoryCacheStoreOptions = v.InferInput<typeof OptionsSchema> & {
  /** Clock in ms; replace it in tests. */
  now?: () => number;
};

type Item = { kind: 'answer'; answer: CachedAnswer; size: number } | { kind: 'candidates'; list: CacheCandidate[]; size: number };

/**
 * A cache store in this process: one lru-cache bounded by bytes, with a TTL
 * per entry. Least recently used entries go first when the bound is reached.
 * Not shared between gateway instances (use `cache-redis` for that).
 */
export function memoryCacheStore(options: MemoryCacheStoreOptions = {}): CacheStore {
  const { now = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const lru = new LRUCache<string, Item>({
    maxSize: opts.maxBytes,
    sizeCalculation: (item) => item.size,
    perf: { now },
    // Read the clock on every check, so a test clock that jumps is seen at once.
    ttlResolution: 0,
  });
  const candidateSize = (list: CacheCandidate[]) => {
    let size = ENTRY_OVERHEAD;
    for (const c of list) size += c.vector.byteLength + c.key.length + 64;
    return size;
  };
  return {
    name: STORE_NAMES.memory,
    async get(key) {
      const item = lru.get(`a:${key}`);
      return item?.kind === 'answer' ? item.answer : null;
    },
    async set(key, answer, ttlMs) {
      if (ttlMs <= 0) return;
      lru.set(`a:${key}`, { kind: 'answer', answer, size: answer.body.length + ENTRY_OVERHEAD }, { ttl: ttlMs });
    },
    async candidates(scope, limit) {
      const item = lru.get(`v:${scope}`);
      return item?.kind === 'candidates' ? item.list.slice(0, limit) : [];
    },
    async addCandidate(scope, candidate, limit, ttlMs) {
      if (ttlMs <= 0) return;
      const k = `v:${scope}`;
      const item = lru.get(k);
      const t = now();
      const list = [candidate];
      let longest = candidate.expiresAt;
      if (item?.kind === 'candidates') {
        for (const c of item.list) {
          if (list.length >= limit) break;
          if (c.expiresAt > t && c.key !== candidate.key) {
            list.push(c);
            if (c.expiresAt > longest) longest = c.expiresAt;
          }
        }
      }
      lru.set(k, { kind: 'candidates', list, size: candidateSize(list) }, { ttl: Math.max(ttlMs, longest - t) });
    },
  };
}

/** Registers an in-memory cache store as `cache-memory` in `api.stores`; pick it with the cache plugin's `store: "memory"` (the default). */
export function cacheMemory(options: MemoryCacheStoreOptions = {}): GatewayPlugin {
  const store = memoryCacheStore(options);
  return {
    name: PLUGIN_NAME,
    state: [
      { name: 'entries', scope: 'workspace', keyedBy: "The cache modes' answers and vectors, under the keys they give (each holds the workspace)." },
    ],
    apply(api) {
      api.stores.add(STORE_NAMES.memory, store);
    },
  };
}

export default cacheMemory;
