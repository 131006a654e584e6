import { fieldSchema as f, GatewayError, STAGES, type Dispatch, type GatewayPlugin, type GatewayResponse, type RequestContext, type Target, type TargetField } from '../../sdk/index.js';

export const PLUGIN_NAME = 'timeout';

/** The config field this plugin reads: `request_timeout` in ms, inherited by every target that sets none. */
export const TIMEOUT_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  request_timeout: { schema: f.integer(1), inherit: 'always', affectsAnswer: false, combination: ['request_timeout'] },
});

/**
 * `request_timeout` (ms): aborts an upstream attempt that has not answered in
 * time and fails it with 408 (`request_timeout`), which fallback and the
 * breaker count as a failure. The clock stops when the upstream's response
 * headers arrive, so for a stream it covers the time to the first byte.
 */
export function timeout(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    targetFields: TIMEOUT_FIELDS,
    apply(api) {
      api.addInterceptor(
        PLUGIN_NAME,
        // Not async: a target without a timeout gets the next dispatch's own promise, no wrapper.
        (next) => (ctx, target) => {
          const ms = target.request_timeout;
          return typeof ms === 'number' && ms > 0 ? withTimeout(next, ctx, target, ms) : next(ctx, target);
        },
        // Innermost: each retry attempt has its own clock, and the breaker sees a timeout as a failure.
        STAGES.interceptor.TIMEOUT,
      );
    },
  };
}

async function withTimeout(next: Dispatch, ctx: RequestContext, target: Target, ms: number): Promise<GatewayResponse> {
  const outer = ctx.attemptSignal ?? ctx.signal;
  const controller = new AbortController();
  const expired = new GatewayError('request_timeout', `The upstream did not answer within request_timeout (${ms} ms).`);
  const onOuterAbort = () => controller.abort(outer.reason);
  outer.addEventListener('abort', onOuterAbort, { once: true });
  const timer = setTimeout(() => controller.abort(expired), ms);
  ctx.attemptSignal = controller.signal;
  try {
    return await next(ctx, target);
  } catch (err) {
    throw controller.signal.reason === expired ? expired : err;
  } finally {
    clearTimeout(timer);
    ctx.attemptSignal = outer === ctx.signal ? null : outer;
    outer.removeEventListener('abort', onOuterAbort);
  }
}

export default timeout;
