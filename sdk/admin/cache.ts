/**
 * A small read-through cache for what the request path looks up in the
 * control plane (keys, slugs, configs, workspaces). Entries live `ttlMs`;
 * concurrent misses for one key share one load; `clear()` drops everything
 * (called on every admin write on this instance). Misses are cached too, so
 * unknown keys do not reach the database on every request.
 */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expires: number }>();
  readonly #loading = new Map<string, Promise<V>>();
  #generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  /** The cached value, or the loader's result (cached when no `clear()` happened meanwhile). */
  get(key: string, load: () => Promise<V>): V | Promise<V> {
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      if (hit.expires > this.now()) return hit.value;
      this.#entries.delete(key);
    }
    const pending = this.#loading.get(key);
    if (pending !== undefined) return pending;
    const generation = this.#generation;
    const promise = load().then(
      (value) => {
        this.#loading.delete(key);
        // A write during the load may have made this value stale: serve it once, do not keep it.
        if (generation === this.#generation && this.ttlMs > 0) this.#set(key, value);
        return value;
      },
      (err: unknown) => {
        this.#loading.delete(key);
        throw err;
      },
    );
    this.#loading.set(key, promise);
    return promise;
  }

  /** Drops one entry (a write to what it holds); loads in flight for any key are served once, not kept. */
  delete(key: string): void {
    this.#generation++;
    this.#entries.delete(key);
    this.#loading.delete(key);
  }

  /** Drops every entry (an admin write anywhere); loads in flight are served once, not kept. */
  clear(): void {
    this.#generation++;
    this.#entries.clear();
    this.#loading.clear();
  }

  /** Entries held now (expired ones included until they are read or pushed out). */
  get size(): number {
    return this.#entries.size;
  }

  #set(key: string, value: V): void {
    if (this.#entries.size >= this.maxEntries) {
      // Oldest first (Map keeps insertion order): bounded memory even under a flood of random keys.
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, expires: this.now() + this.ttlMs });
  }
}
