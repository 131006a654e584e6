import {
  deadlineError,
  deadlineLeft,
  isEventStream,
  fieldSchema as f,
  GatewayError,
  STAGES,
  stateKey,
  STREAM_IDLE_ERRORS,
  STREAM_RECOVERY,
  streamIdleError,
  streamControl,
  toSource,
  UpstreamBody,
  type Dispatch,
  type GatewayPlugin,
  type GatewayResponse,
  type RequestContext,
  type Target,
  type TargetField,
} from '../../sdk/index.js';

export const PLUGIN_NAME = 'timeout';

/**
 * The config fields this plugin reads, in ms, inherited by every target that sets none:
 * `request_timeout` (until the upstream's headers) and `stream_idle_timeout` (the longest gap in a
 * streamed answer, the wait for its first chunk included).
 */
export const TIMEOUT_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  request_timeout: { schema: f.integer(1), inherit: 'always', affectsAnswer: false, combination: ['request_timeout'] },
  stream_idle_timeout: { schema: f.integer(1), inherit: 'always', affectsAnswer: false, combination: ['stream_idle_timeout'] },
});

/** The code of a stream that went quiet for longer than `stream_idle_timeout` (the SDK's, shared with stream recovery). */
export const TIMEOUT_ERRORS = STREAM_IDLE_ERRORS;

/** The idle timeout of the target that answered, for the rest of its stream. */
const IDLE = stateKey<number>(`${PLUGIN_NAME}:idle`);

/**
 * `request_timeout` (ms): aborts an upstream attempt that has not answered in
 * time and fails it with 408 (`request_timeout`), which fallback and the
 * breaker count as a failure. The clock stops when the upstream's response
 * headers arrive, so for a stream it covers the time to the first byte.
 *
 * `stream_idle_timeout` (ms): a streamed answer whose first chunk does not come
 * in time fails its attempt with 504 `stream_idle_timeout` (nothing was sent,
 * so retry and fallback move on); a gap that long later on ends the stream
 * with that error in the client's format and closes the upstream connection.
 */
export function timeout(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    targetFields: TIMEOUT_FIELDS,
    errorCodes: TIMEOUT_ERRORS,
    state: [],
    apply(api) {
      api.addInterceptor(
        PLUGIN_NAME,
        // Not async: a target without a timeout gets the next dispatch's own promise, no wrapper.
        (next) => (ctx, target) => {
          const ms = typeof target.request_timeout === 'number' && target.request_timeout > 0 ? target.request_timeout : Infinity;
          const idle = target.stream_idle_timeout;
          // The request's deadline (the routing plugin's): no attempt starts after it, and none outlasts it.
          const left = deadlineLeft(ctx);
          if (left <= 0) return Promise.reject(deadlineError(ctx));
          const answer = ms === Infinity && left === Infinity ? next(ctx, target) : withTimeout(next, ctx, target, Math.min(ms, left), left < ms);
          return typeof idle === 'number' && idle > 0 ? firstChunkWithin(answer, ctx, idle) : answer;
        },
        // Innermost: each retry attempt has its own clock, and the breaker sees a timeout as a failure.
        STAGES.interceptor.TIMEOUT,
      );
      // The rest of the stream, as the client gets it: a gap ends it in the door's own format.
      api.hooks.afterResponse.tap({ name: PLUGIN_NAME, stage: STAGES.afterResponse.GUARD }, (response, ctx) => {
        const ms = ctx.get(IDLE);
        // A stream that recovers from breaks (on_stream_failure: continue) takes its silence as a break itself.
        if (ms === undefined || ctx.get(STREAM_RECOVERY)?.ownsIdle === true) return response;
        streamControl(ctx, response)?.idleTimeout(ms, () => streamIdleError(ms));
        return response;
      });
    },
  };
}

/**
 * A streamed answer's first chunk, waited for up to `ms`: an upstream that sent its headers and then
 * nothing fails the attempt (nothing reached the client yet, so a retry or fallback can still answer).
 * The chunk is put back for the stream's reader.
 */
async function firstChunkWithin(answer: Promise<GatewayResponse>, ctx: RequestContext, ms: number): Promise<GatewayResponse> {
  const response = await answer;
  if (response.status < 200 || response.status >= 300 || !isEventStream(response)) return response;
  let onFirst!: (arrived: boolean) => void;
  const first = new Promise<boolean>((resolve) => (onFirst = resolve));
  // Started now, held for the writer: what arrives while this waits is kept, in order.
  const body = UpstreamBody.started(response.status, toSource(response.body), () => onFirst(true));
  const timer = setTimeout(() => onFirst(false), ms);
  const arrived = await first;
  clearTimeout(timer);
  if (!arrived) {
    body.abort(new Error('no first chunk in time'));
    throw streamIdleError(ms);
  }
  response.body = body;
  ctx.set(IDLE, ms);
  return response;
}

/** An attempt bounded by `ms`: its own `request_timeout`, or what is left of the request's deadline (`byDeadline`). */
async function withTimeout(next: Dispatch, ctx: RequestContext, target: Target, ms: number, byDeadline: boolean): Promise<GatewayResponse> {
  const outer = ctx.attemptSignal ?? ctx.signal;
  const controller = new AbortController();
  let expired: GatewayError | null = null;
  const onOuterAbort = () => controller.abort(outer.reason);
  outer.addEventListener('abort', onOuterAbort, { once: true });
  const timer = setTimeout(() => {
    expired = byDeadline ? deadlineError(ctx) : new GatewayError('request_timeout', `The upstream did not answer within request_timeout (${ms} ms).`);
    controller.abort(expired);
  }, ms);
  ctx.attemptSignal = controller.signal;
  try {
    return await next(ctx, target);
  } catch (err) {
    throw expired !== null && controller.signal.reason === expired ? expired : err;
  } finally {
    clearTimeout(timer);
    ctx.attemptSignal = outer === ctx.signal ? null : outer;
    outer.removeEventListener('abort', onOuterAbort);
  }
}

export default timeout;
