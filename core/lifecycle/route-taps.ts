import type { RequestContext } from '../context.js';
import { createHooks, type GatewayHooks } from '../hooks.js';
import type { AuthInfo, GatewayResponse, RouteDefinition, Target } from '../types.js';

/**
 * Which routes a tap serves: route names (a name also matches every route that speaks that API,
 * `RouteDefinition.api`: `chat.completions` covers the prompt completions route), or a predicate on
 * the route. Evaluated once per route when boot finishes, never per request.
 */
export type RouteFilter = readonly string[] | ((route: RouteDefinition) => boolean);

/** The tap option every lifecycle hook but `request` takes (`request` runs before a route is matched). */
export interface RouteTapOptions {
  /** Serve these routes only; absent: every route. See {@link RouteFilter}. */
  routes?: RouteFilter;
  /**
   * For an `auth` tap: it accepts only credentials another authenticator's caller was given (a realtime client
   * secret minted by a key), so on its own it does not make the gateway authenticated: a route it alone serves is not
   * refused for want of a credential, and the server's start rule does not count it (`authenticatorsOf`).
   */
  delegated?: boolean;
}

/** The hooks whose taps may name routes, and where the request context is among their arguments. */
export const ROUTED_HOOKS = Object.freeze({ auth: 0, resolveProvider: 0, beforeRequest: 0, resolveTarget: 1, afterResponse: 1, log: 0 } as const);
export type RoutedHook = keyof typeof ROUTED_HOOKS;

/** What a tap keeps besides tapable's own fields. */
interface FilteredTap {
  name: string;
  type: 'sync' | 'async' | 'promise';
  fn: (...args: unknown[]) => unknown;
  stage?: number;
  before?: string;
  routes?: RouteFilter;
  delegated?: boolean;
  /** The plugin's function, as the pipeline calls it on the routes it serves (`fn` is it behind a route check). */
  unfiltered?: (...args: unknown[]) => unknown;
  /** The filter as a predicate. */
  serves?: (route: RouteDefinition) => boolean;
}

function predicate(filter: RouteFilter): (route: RouteDefinition) => boolean {
  if (typeof filter === 'function') return filter;
  const names = new Set(filter);
  return (route) => names.has(route.name) || (route.api !== undefined && names.has(route.api));
}

/**
 * Lets the taps of the routed hooks name their routes. A filtered tap stays in the public hook behind
 * a route check, for the plugins that call a hook themselves (the dashboard's session probe, the
 * native resource calls); the pipeline never pays that check: it calls each route's own compiled
 * hooks (see {@link compileRouteHooks}), built from the plugin's function. The `request` hook
 * refuses a filter: no route is known when it runs.
 */
export function enableRouteFilters(hooks: GatewayHooks): void {
  const request = hooks.request as unknown as Record<'tap', (options: unknown, fn: unknown) => void>;
  const plainTap = request.tap.bind(hooks.request);
  request.tap = (options, fn) => {
    if (typeof options === 'object' && options !== null && (options as RouteTapOptions).routes !== undefined) {
      throw new Error(`tap "${(options as { name?: string }).name}": the request hook runs before a route is matched and takes no routes filter`);
    }
    plainTap(options, fn);
  };
  for (const name of Object.keys(ROUTED_HOOKS) as RoutedHook[]) {
    const hook = hooks[name] as unknown as Record<'tap' | 'tapAsync' | 'tapPromise', (options: unknown, fn: (...args: unknown[]) => unknown) => void>;
    const at = ROUTED_HOOKS[name];
    // A waterfall hook hands its first argument on when a tap is skipped; a bail or parallel hook, nothing.
    const waterfall = name === 'resolveTarget' || name === 'afterResponse';
    for (const method of ['tap', 'tapAsync', 'tapPromise'] as const) {
      const original = hook[method].bind(hook);
      hook[method] = (options, fn) => {
        if (typeof options !== 'object' || options === null || (options as RouteTapOptions).routes === undefined) return original(options, fn);
        const serves = predicate((options as RouteTapOptions).routes!);
        const skip = (args: unknown[]): unknown => (waterfall ? args[0] : undefined);
        const applies = (args: unknown[]) => {
          const route = (args[at] as RequestContext).route;
          return route !== null && serves(route);
        };
        const guarded =
          method === 'tapAsync'
            ? (...args: unknown[]) => (applies(args) ? fn(...args) : (args[args.length - 1] as (e: null, r?: unknown) => void)(null, skip(args)))
            : method === 'tapPromise'
              ? (...args: unknown[]) => (applies(args) ? fn(...args) : Promise.resolve(skip(args)))
              : (...args: unknown[]) => (applies(args) ? fn(...args) : skip(args));
        original({ ...(options as object), unfiltered: fn, serves }, guarded);
      };
    }
  }
}

/** A tap the core adds to a hook (the built-in defaults), merged with the plugins' at their stage. */
export interface CoreTap {
  hook: 'auth' | 'resolveProvider';
  name: string;
  stage: number;
  fn: (ctx: RequestContext) => unknown;
  /** `always`, or only on routes where a plugin tapped the same hook (the 401 needs an authenticator to refuse for). */
  when: 'always' | 'withPluginTaps';
}

/** One route's lifecycle, compiled at boot: each hook's taps that serve the route, or null when none do. */
export interface RouteHooks {
  /** Who is calling; null: the route is not authenticated (no authenticator serves it, or `auth: false`). */
  readonly auth: ((ctx: RequestContext) => Promise<AuthInfo | undefined>) | null;
  /** Which target serves the request: the plugins' taps, then the core's default target. */
  readonly resolveProvider: (ctx: RequestContext) => Target | Promise<Target>;
  readonly beforeRequest: ((ctx: RequestContext) => Promise<GatewayResponse | undefined>) | null;
  readonly resolveTarget: ((target: Target, ctx: RequestContext) => Promise<Target>) | null;
  readonly afterResponse: ((response: GatewayResponse, ctx: RequestContext) => Promise<GatewayResponse>) | null;
  readonly log: ((ctx: RequestContext) => Promise<void>) | null;
}

type AnyHook = { taps: FilteredTap[]; promise: (...args: unknown[]) => Promise<unknown> } & Record<'tap' | 'tapAsync' | 'tapPromise', (options: object, fn: unknown) => void>;

const METHOD = { sync: 'tap', async: 'tapAsync', promise: 'tapPromise' } as const;

/**
 * Builds each route's hooks (and those of a request no route matched, under `null`) once, when boot
 * finishes: a tap is in a route's list when its filter serves the route, so the request path runs
 * exactly the taps that apply and checks no route. Routes that are served by the same taps share one
 * compiled hook.
 */
export function compileRouteHooks(hooks: GatewayHooks, coreTaps: readonly CoreTap[], routes: readonly RouteDefinition[]): Map<RouteDefinition | null, RouteHooks> {
  const shared = new Map<string, unknown>();
  const compiled = new Map<RouteDefinition | null, RouteHooks>();
  const build = (name: RoutedHook, route: RouteDefinition | null): AnyHook | null => {
    const pluginTaps = (hooks[name] as unknown as AnyHook).taps.filter((t) => t.serves === undefined || (route !== null && t.serves(route)));
    const authenticated = pluginTaps.some((t) => t.delegated !== true);
    const core = coreTaps.filter((t) => t.hook === name && (t.when === 'always' || authenticated));
    if (pluginTaps.length === 0 && core.length === 0) return null;
    const key = `${name}:${pluginTaps.map((t) => (hooks[name] as unknown as AnyHook).taps.indexOf(t)).join(',')}:${core.map((t) => t.name).join(',')}`;
    let hook = shared.get(key) as AnyHook | undefined;
    if (hook === undefined) {
      hook = createHooks()[name] as unknown as AnyHook;
      for (const tap of pluginTaps) {
        const { fn, type, unfiltered, serves: _serves, routes: _routes, ...options } = tap;
        hook[METHOD[type]](options, unfiltered ?? fn);
      }
      // Tapped after the plugins' at their own (last) stages: tapable orders by stage, so they run last.
      for (const tap of core) hook.tap({ name: tap.name, stage: tap.stage }, tap.fn);
      shared.set(key, hook);
    }
    return hook;
  };
  for (const route of [null, ...routes]) {
    const auth = route === null || route.auth === false ? null : build('auth', route);
    const resolveProvider = build('resolveProvider', route)!;
    // With only the core's default, it is called directly: no promise for the minimal build.
    const onlyCore = resolveProvider.taps.length === 1 && coreTaps.some((t) => t.hook === 'resolveProvider' && t.name === resolveProvider.taps[0]!.name);
    const direct = onlyCore ? (resolveProvider.taps[0]!.fn as (ctx: RequestContext) => Target) : null;
    const before = build('beforeRequest', route);
    const target = build('resolveTarget', route);
    const after = build('afterResponse', route);
    const log = build('log', route);
    // Arrows, not bound methods: tapable compiles a hook on its first call and replaces `promise` then.
    compiled.set(route, {
      auth: auth === null ? null : (ctx) => auth.promise(ctx) as Promise<AuthInfo | undefined>,
      resolveProvider: direct ?? ((ctx) => resolveProvider.promise(ctx) as Promise<Target>),
      beforeRequest: before === null ? null : (ctx) => before.promise(ctx) as Promise<GatewayResponse | undefined>,
      resolveTarget: target === null ? null : (t, ctx) => target.promise(t, ctx) as Promise<Target>,
      afterResponse: after === null ? null : (response, ctx) => after.promise(response, ctx) as Promise<GatewayResponse>,
      log: log === null ? null : (ctx) => log.promise(ctx) as Promise<void>,
    });
  }
  return compiled;
}

/** The plugins that authenticate requests: the auth hook's taps, but the delegated ones (see {@link RouteTapOptions.delegated}). */
export function authenticatorsOf(hooks: GatewayHooks): string[] {
  return (hooks.auth as unknown as AnyHook).taps.filter((t) => t.delegated !== true).map((t) => t.name);
}
