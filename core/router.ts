import type { RequestContext } from './context.js';
import type { RouteDefinition } from './types.js';

interface ParamRoute {
  route: RouteDefinition;
  segments: string[];
}

/** What {@link RouteTable.match} found: the route, and the values of its `:param` segments. */
export interface RouteMatch {
  /** The route that matched. */
  route: RouteDefinition;
  /** The path's `:param` values by name; null for a path without any (and for the fallback route). */
  params: Record<string, string> | null;
}

/** A route as {@link RouteTable.list} gives it. */
export interface RouteEntry {
  /** The route as it was added. */
  readonly route: RouteDefinition;
  /**
   * Set on the fallback route only (the generic proxy): the prefix and the
   * methods it serves, for it answers any unmatched path under the prefix
   * (its own `method` and `path` are nominal).
   */
  readonly fallback: { readonly prefix: string; readonly methods: readonly string[] } | null;
}

/**
 * Routes by method and path. Static paths are one map lookup; `:param`
 * routes are split into segments once at boot. A fallback route (the generic
 * proxy) takes any unmatched path under its prefix.
 */
export class RouteTable {
  readonly #static = new Map<string, RouteDefinition>();
  readonly #params: ParamRoute[] = [];
  readonly #paths = new Set<string>();
  readonly #byName = new Map<string, RouteDefinition>();
  /** Every added route in registration order, for {@link list}; never read on the request path. */
  readonly #all: RouteDefinition[] = [];
  #fallback: { prefix: string; methods: Set<string>; route: RouteDefinition; claims: ((ctx: RequestContext) => boolean) | null } | null = null;
  #frozen = false;

  /**
   * Adds a route, during a plugin's `apply` only (the table is frozen after boot).
   * Throws when another route already has its name, or (a path without `:param`) its method and path.
   */
  add(route: RouteDefinition): void {
    if (this.#frozen) throw new Error(`route table is frozen after boot; add "${route.name}" in a plugin's apply()`);
    const key = `${route.method} ${route.path}`;
    // Names are how routes are found (internal requests, logs, metrics, route-filtered taps): two routes under one
    // name would leave one of them unreachable by name, so the second is a boot error naming both.
    const named = this.#byName.get(route.name);
    if (named !== undefined && named !== route) {
      throw new Error(`route name "${route.name}" is registered twice: ${named.method} ${named.path} and ${key}; give one of them another name`);
    }
    if (route.path.includes('/:')) {
      this.#params.push({ route, segments: route.path.split('/') });
    } else {
      if (this.#static.has(key)) throw new Error(`route ${key} is registered twice`);
      this.#static.set(key, route);
    }
    this.#paths.add(route.path);
    this.#all.push(route);
    this.#byName.set(route.name, route);
  }

  /**
   * Every route, in the order they were added, then the fallback route (if
   * one is set), flagged. For tools that describe the API (the OpenAPI
   * document); valid at any time, complete once boot has finished.
   */
  list(): readonly RouteEntry[] {
    const entries: RouteEntry[] = this.#all.map((route) => ({ route, fallback: null }));
    const fb = this.#fallback;
    if (fb !== null) entries.push({ route: fb.route, fallback: { prefix: fb.prefix, methods: [...fb.methods] } });
    return entries;
  }

  /** The route registered under a name (names are unique: see {@link add}). */
  byName(name: string): RouteDefinition | undefined {
    return this.#byName.get(name);
  }

  /**
   * Sets the route that serves unmatched paths under `prefix` for `methods`. With `claims`, it also serves a
   * request that a route of its own matched, when `claims(ctx)` holds: every route it could serve defers to it
   * then (as with `deferToFallback`, checked before auth), so an upstream path a route shadows stays reachable.
   */
  setFallback(prefix: string, methods: readonly string[], route: RouteDefinition, claims?: (ctx: RequestContext) => boolean): void {
    if (this.#frozen) throw new Error('route table is frozen after boot');
    if (this.#fallback) throw new Error(`a fallback route is already set (${this.#fallback.route.name})`);
    this.#fallback = { prefix, methods: new Set(methods), route, claims: claims ?? null };
  }

  /** Returns the route for a request, or a string saying why none matched. */
  match(method: string, path: string): RouteMatch | 'method_not_allowed' | null {
    const exact = this.#static.get(`${method} ${path}`);
    if (exact) return { route: exact, params: null };
    if (this.#params.length > 0) {
      const parts = path.split('/');
      for (const p of this.#params) {
        if (p.route.method !== method || p.segments.length !== parts.length) continue;
        const params = matchSegments(p.segments, parts);
        if (params) return { route: p.route, params };
      }
    }
    const fb = this.#fallback;
    if (fb && path.startsWith(fb.prefix)) {
      return fb.methods.has(method) ? { route: fb.route, params: null } : 'method_not_allowed';
    }
    return this.#paths.has(path) ? 'method_not_allowed' : null;
  }

  /** The fallback route if it would serve this method and path, else null. */
  fallbackFor(method: string, path: string): RouteDefinition | null {
    const fb = this.#fallback;
    return fb !== null && path.startsWith(fb.prefix) && fb.methods.has(method) ? fb.route : null;
  }

  /** True when a route with exactly this method and path was added. */
  has(method: string, path: string): boolean {
    if (this.#static.has(`${method} ${path}`)) return true;
    return this.#params.some((p) => p.route.method === method && p.route.path === path);
  }

  /** True for the route set with setFallback. */
  isFallback(route: RouteDefinition): boolean {
    return this.#fallback !== null && this.#fallback.route === route;
  }

  /**
   * Whether the fallback serves a request that `route` matched: the route's own `deferToFallback`, or the
   * fallback's `claims` for a route it could serve. Checked by the pipeline before auth. Routes are never
   * copied for this, so a plugin that compares `ctx.route` with a route it registered still finds it.
   */
  defersToFallback(route: RouteDefinition, ctx: RequestContext): boolean {
    if (route.deferToFallback !== undefined && route.deferToFallback(ctx)) return true;
    const fb = this.#fallback;
    return fb !== null && fb.claims !== null && route !== fb.route && route.path.startsWith(fb.prefix) && fb.methods.has(route.method) && fb.claims(ctx);
  }

  /** Refuses further routes; the gateway calls it when boot finishes. */
  freeze(): void {
    this.#frozen = true;
  }
}

/**
 * The API a route speaks: its `api` when it is another route's under another name (the prompt
 * completions route speaks `chat.completions`), else its own name. Provider adapters are found by
 * it, and plugins that read bodies and answers by route key on it.
 */
export function routeApi(route: RouteDefinition): string {
  return route.api ?? route.name;
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  let params: Record<string, string> | null = null;
  for (let i = 0; i < pattern.length; i++) {
    const seg = pattern[i]!;
    const part = parts[i]!;
    if (seg.startsWith(':')) {
      if (part === '') return null;
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        return null;
      }
      (params ??= {})[seg.slice(1)] = value;
    } else if (seg !== part) {
      return null;
    }
  }
  return params ?? {};
}
