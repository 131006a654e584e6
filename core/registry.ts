import { GatewayError } from './errors.js';

/**
 * A named collection filled by plugins at boot and read on the request path.
 * Frozen after boot: adding later throws, so registration order can never
 * depend on traffic.
 */
export class Registry<T> {
  /** What the registry holds, for its errors, e.g. `provider` or `strategy`. */
  readonly kind: string;
  readonly #items = new Map<string, T>();
  #frozen = false;

  /** Creates an empty registry of `kind`; the gateway creates one per registry in {@link Registries}. */
  constructor(kind: string) {
    this.kind = kind;
  }

  /** Registers `item` under `name`, during a plugin's `apply` only. Throws when the name is taken or boot has finished. */
  add(name: string, item: T): void {
    if (this.#frozen) throw new Error(`${this.kind} registry is frozen after boot; register "${name}" in a plugin's apply()`);
    if (this.#items.has(name)) throw new Error(`${this.kind} "${name}" is registered twice`);
    this.#items.set(name, item);
  }

  /** The item registered under `name`, or undefined. */
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

  /** Whether an item is registered under `name`. */
  has(name: string): boolean {
    return this.#items.has(name);
  }

  /** The names registered, in registration order. */
  names(): string[] {
    return [...this.#items.keys()];
  }

  /** How many items are registered. */
  get size(): number {
    return this.#items.size;
  }

  /** Refuses further registrations; the gateway calls it when boot finishes. */
  freeze(): void {
    this.#frozen = true;
  }
}
