import type { GatewayResponse, RequestContext, Usage } from '../../sdk/index.js';

/** The values of `x-gateway-cache-status` (and `ctx.cacheStatus`). */
export type CacheStatus = 'HIT' | 'SEMANTIC HIT' | 'MISS' | 'REFRESH' | 'DISABLED';

/** Routes whose answers are cached. Everything else passes through untouched. */
export const CACHEABLE_ROUTES: ReadonlySet<string> = new Set(['chat.completions', 'completions', 'embeddings', 'responses', 'messages', 'images.generations', 'moderations']);

/** `api.stores` names of the cache stores, by the cache plugin's `store` option. */
export const STORE_NAMES = Object.freeze({ memory: 'cache-memory', redis: 'cache-redis' } as const);

/**
 * One stored answer. `body` is always the JSON text of a complete answer
 * (a streamed miss is assembled into one `chat.completion` /
 * `text_completion` first); a streamed hit is replayed from it.
 */
export interface CachedAnswer {
  /** Format version, so a later layout can ignore older entries. */
  v: 1;
  /** Route that produced it (`chat.completions`, `completions`, `embeddings`). */
  route: string;
  status: number;
  /** JSON text of the answer, as the upstream sent it (non-stream) or assembled from the stream. */
  body: string;
  /** Token usage of the original call, reported again on a hit (which itself costs nothing upstream). */
  usage: Usage | null;
  /** True when assembled from a stream: such an answer has usage only if the client had asked for it. */
  fromStream: boolean;
  /** Epoch ms (the cache plugin's clock). */
  createdAt: number;
  expiresAt: number;
}

/** A semantic candidate: the exact key of a stored answer and the unit-length embedding of its text. */
export interface CacheCandidate {
  key: string;
  vector: Float32Array;
  createdAt: number;
  expiresAt: number;
}

/**
 * A cache store, registered in `api.stores` (`cache-memory`, `cache-redis`).
 * Stores never throw on the request path: an outage is a miss (`get` → null,
 * `candidates` → []) and a lost write, reported by the store itself.
 */
export interface CacheStore {
  readonly name: string;
  get(key: string): Promise<CachedAnswer | null>;
  /** Stores `answer` under `key` for `ttlMs`. */
  set(key: string, answer: CachedAnswer, ttlMs: number): Promise<void>;
  /** The newest `limit` candidates of a semantic scope, newest first (expired ones may be included). */
  candidates(scope: string, limit: number): Promise<CacheCandidate[]>;
  /** Adds a candidate at the head of a scope's list and trims the list to `limit`; the list lives at least `ttlMs`. */
  addCandidate(scope: string, candidate: CacheCandidate, limit: number, ttlMs: number): Promise<void>;
}

/** What a cache mode is given for one request. */
export interface CacheLookup {
  readonly ctx: RequestContext;
  readonly store: CacheStore;
  /** Exact-match key (hex SHA-256): partition + canonical body. */
  readonly key: string;
  /** Digest of everything in the key except the body: route, target identity, workspace, namespace. */
  readonly partition: string;
  /** The cache plugin's clock at arrival (epoch ms). */
  readonly now: number;
  /**
   * The response that answers this request from a stored answer (JSON, or SSE
   * for `stream: true`), or null when the answer is too old for this request's
   * `max_age`, expired, from another route, or cannot be replayed as asked.
   */
  serve(answer: CachedAnswer): GatewayResponse | null;
  /** A mode's own data, carried from `lookup` to `save` (the semantic mode keeps its embedding here). */
  scratch: unknown;
}

export interface CacheHit {
  response: GatewayResponse;
  answer: CachedAnswer;
  status: 'HIT' | 'SEMANTIC HIT';
}

/** A cache mode, registered in `api.cacheModes` by name (`simple`, `semantic`). */
export interface CacheMode {
  /** Finds an answer; null is a miss. Should not throw (the cache plugin treats a throw as a miss). */
  lookup(req: CacheLookup): Promise<CacheHit | null>;
  /** Stores a fresh answer (after the client got it); runs off the response path. */
  save(req: CacheLookup, answer: CachedAnswer, ttlMs: number): Promise<void>;
}
