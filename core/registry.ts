import { GatewayError } from './errors.js';

/**
 * A named collection filled by plugins at boot and read on the request path.
 * Frozen after boot: adding later throws, so registration order can never
 * depend on traffic.
 */
export class Registry<T> {
  readonly kind: string;
  readonly #items = new Map<string, T>();
  #frozen = false;

  constructor(kind: string) {
    this.kind = kind;
  }

  add(name: string, item: T): void {
    if (this.#frozen) throw new Error(`${this.kind} registry is frozen after boot; register "${name}" in a plugin's apply()`);
    if (this.#items.has(name)) throw new Error(`${this.kind} "${name}" is registered twice`);
    this.#items.set(name, item);
  }

  get(name: string): T | undefined {
    return this.#items.get(name);
  }

  /** Like get, but a missing name is a 400 naming it. */
  require(name: string, param: string | null = null): T {
    const item = this.#items.get(name);
    if (item === undefined) {
      throw new GatewayError(this.kind === 'provider' ? 'unknown_provider' : 'invalid_request', `Unknown ${this.kind} "${name}". Known: ${[...this.#items.keys()].join(', ') || 'none'}.`, { param });
    }
    return item;
  }

  has(name: string): boolean {
    return this.#items.has(name);
  }

  names(): string[] {
    return [...this.#items.keys()];
  }

  get size(): number {
    return this.#items.size;
  }

  freeze(): void {
    this.#frozen = true;
  }
}
