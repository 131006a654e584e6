import tapable from 'tapable';
import type { RequestContext } from './context.js';
import type { RouteTapOptions } from './lifecycle/route-taps.js';
import type { AuthInfo, GatewayResponse, Target } from './types.js';

const { SyncHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, AsyncParallelHook } = tapable;

/**
 * Creates the lifecycle hooks of one gateway, in the order they run:
 * request → auth → resolveProvider → beforeRequest → strategy → (per leaf: resolveTarget →
 * interceptors → transport) → afterResponse → log.
 * Taps are added at boot only. Stages: `STAGES` (core/stages.ts). Every hook but `request` takes a
 * `routes` tap option (`{ name, stage, routes: ['chat.completions'] }` or a predicate on the route):
 * the tap then runs for those routes only, decided once at boot (core/lifecycle/route-taps.ts). The
 * lifecycle that runs them is the table in core/lifecycle/table.ts.
 */
export function createHooks() {
  return Object.freeze({
    /** Request arrived, before auth. Taps annotate the context (trace ids, metadata); throw a GatewayError to reject. No I/O. */
    request: new SyncHook<[RequestContext]>(['ctx']),
    /** Who is calling. First tap returning an AuthInfo wins; throw a GatewayError to reject. On a route some tap serves, none answering is a 401 (the core's tap at `STAGES.auth.REFUSE`). */
    auth: new AsyncSeriesBailHook<[RequestContext], AuthInfo | undefined, RouteTapOptions>(['ctx']),
    /** Which target serves the request. First tap returning a Target wins; `undefined` passes to the next tap, the last being the core's default (`STAGES.resolveProvider.DEFAULT_TARGET`). */
    resolveProvider: new AsyncSeriesBailHook<[RequestContext], Target | undefined, RouteTapOptions>(['ctx']),
    /**
     * Before the strategy, once per client request. Return a GatewayResponse to answer without calling upstream (cache hit); throw to reject.
     * The strategy runs `ctx.target` as it stands after this hook: a tap at `STAGES.beforeRequest.PREPARE` may replace it.
     */
    beforeRequest: new AsyncSeriesBailHook<[RequestContext], GatewayResponse | undefined, RouteTapOptions>(['ctx']),
    /**
     * Per leaf target a strategy runs, before the interceptors (so retry, breaker and timeout see the
     * result): each tap returns the target to call, e.g. a provider slug replaced by the provider and
     * credentials it stands for. Runs again for each leaf of a fallback, not for each retry.
     */
    resolveTarget: new AsyncSeriesWaterfallHook<[Target, RequestContext], Target, RouteTapOptions>(['target', 'ctx']),
    /** After the upstream answered (or a before tap did). Each tap returns the response to pass on, possibly replaced or wrapped. */
    afterResponse: new AsyncSeriesWaterfallHook<[GatewayResponse, RequestContext], GatewayResponse, RouteTapOptions>(['response', 'ctx']),
    /** After the response ended. Taps run in parallel; never awaited by the response path, errors are logged. */
    log: new AsyncParallelHook<[RequestContext], RouteTapOptions>(['ctx']),
  });
}

/** The lifecycle hooks of one gateway (`api.hooks`), as {@link createHooks} makes them: tap them from `apply` with a name and a `STAGES` stage. */
export type GatewayHooks = ReturnType<typeof createHooks>;
