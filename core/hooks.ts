import tapable from 'tapable';
import type { RequestContext } from './context.js';
import type { AuthInfo, GatewayResponse, Target } from './types.js';

const { SyncHook, AsyncSeriesBailHook, AsyncSeriesWaterfallHook, AsyncParallelHook } = tapable;

/**
 * Creates the lifecycle hooks of one gateway, in the order they run:
 * request → auth → resolveProvider → beforeRequest → strategy → (per leaf: resolveTarget →
 * interceptors → transport) → afterResponse → log.
 * Taps are added at boot only; tapable compiles each hook on first call. Stages: `STAGES` (core/stages.ts).
 */
export function createHooks() {
  return Object.freeze({
    /** Request arrived, before auth. Taps annotate the context (trace ids, metadata); throw a GatewayError to reject. No I/O. */
    request: new SyncHook<[RequestContext]>(['ctx']),
    /** Who is calling. First tap returning an AuthInfo wins; throw a GatewayError to reject. If the hook has taps and none answers, 401. */
    auth: new AsyncSeriesBailHook<[RequestContext], AuthInfo | undefined>(['ctx']),
    /** Which target serves the request. First tap returning a Target wins; `undefined` passes to the next tap. */
    resolveProvider: new AsyncSeriesBailHook<[RequestContext], Target | undefined>(['ctx']),
    /**
     * Before the strategy, once per client request. Return a GatewayResponse to answer without calling upstream (cache hit); throw to reject.
     * The strategy runs `ctx.target` as it stands after this hook: a tap at `STAGES.beforeRequest.PREPARE` may replace it.
     */
    beforeRequest: new AsyncSeriesBailHook<[RequestContext], GatewayResponse | undefined>(['ctx']),
    /**
     * Per leaf target a strategy runs, before the interceptors (so retry, breaker and timeout see the
     * result): each tap returns the target to call, e.g. a provider slug replaced by the provider and
     * credentials it stands for. Runs again for each leaf of a fallback, not for each retry.
     */
    resolveTarget: new AsyncSeriesWaterfallHook<[Target, RequestContext]>(['target', 'ctx']),
    /** After the upstream answered (or a before tap did). Each tap returns the response to pass on, possibly replaced or wrapped. */
    afterResponse: new AsyncSeriesWaterfallHook<[GatewayResponse, RequestContext]>(['response', 'ctx']),
    /** After the response ended. Taps run in parallel; never awaited by the response path, errors are logged. */
    log: new AsyncParallelHook<[RequestContext]>(['ctx']),
  });
}

export type GatewayHooks = ReturnType<typeof createHooks>;
