import * as v from 'valibot';
import {
  deadlineLeft,
  DEFAULT_MAX_CONTINUATIONS,
  discardResponse,
  fieldSchema as f,
  GatewayError,
  MAX_CONTINUATIONS,
  parseOptions,
  recoverStream,
  retryAfterMs,
  routeApi,
  runContinuation,
  ROUTING,
  STAGES,
  type Dispatch,
  type GatewayPlugin,
  type GatewayResponse,
  type RequestContext,
  type RoutingService,
  type Target,
  type TargetField,
} from '../../sdk/index.js';

export const PLUGIN_NAME = 'retry';

/** Statuses retried when `retry.on_status_codes` is absent; 529 is Anthropic's "overloaded", which a native Messages answer keeps (chat maps it to 503). */
export const DEFAULT_RETRY_STATUS_CODES: readonly number[] = [429, 500, 502, 503, 504, 529];
/** Gateway errors that mean the request may not have reached the provider, so retrying is safe. */
const RETRIABLE_ERRORS = new Set(['upstream_unreachable', 'upstream_invalid_response']);

/**
 * Default bound on the time one target may spend retrying (`maxRetryTimeMs`):
 * 5 minutes, what five waits of the longest honoured `retry-after` (60 s) add
 * up to, the most the former cap of 5 attempts allowed. The spec sets no cap
 * on `retry.attempts`, so the count is taken as asked and the work is bounded
 * in time instead: every wait is at least the backoff's (at least half of
 * min(10 s, 500 ms x 2^n) by default, a provider's `retry-after` only
 * lengthening it), so a target that fails at once is called at most 64 times
 * in that span (waits of at least 250 ms, 500 ms, 1 s, 2 s, 4 s, then 5 s),
 * whatever the count.
 */
export const DEFAULT_MAX_RETRY_TIME_MS = 300_000;

/** The config field this plugin reads: `retry`, inherited by every target that sets none, no part of what is answered. */
export const RETRY_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  retry: {
    schema: f.strictObject({
      attempts: f.integer(0),
      on_status_codes: v.optional(f.statusCodes()),
      // Absent means false (spec default). No default is injected so the output stays what the client sent.
      use_retry_after_headers: v.optional(f.boolean()),
      // Stream recovery (docs/formats.md, "Streams that survive a provider failure"): the same target continues a broken stream.
      on_stream_failure: v.optional(f.oneOf(['end', 'continue'] as const)),
      max_continuations: v.optional(f.integer(1, MAX_CONTINUATIONS)),
    }),
    inherit: 'always',
    affectsAnswer: false,
    combination: ['retry'],
  },
});

const OptionsSchema = v.strictObject({
  /** First backoff delay; each retry doubles it. Default 500 ms. */
  baseDelayMs: v.optional(v.pipe(v.number(), v.minValue(0)), 500),
  /** Longest backoff delay. Default 10 s. */
  maxDelayMs: v.optional(v.pipe(v.number(), v.minValue(0)), 10_000),
  /** Longest `retry-after` honoured; a provider asking more gets its answer returned instead. Default 60 s. */
  maxRetryAfterMs: v.optional(v.pipe(v.number(), v.minValue(0)), 60_000),
  /**
   * Longest time a target may spend retrying, from the start of its first
   * attempt: a retry whose wait would end later is not made, and the last
   * answer (or error) is returned. Default 5 minutes.
   */
  maxRetryTimeMs: v.optional(v.pipe(v.number(), v.minValue(0)), DEFAULT_MAX_RETRY_TIME_MS),
});

export type RetryOptions = v.InferInput<typeof OptionsSchema> & {
  /** Waits; replace it in tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1). */
  random?: () => number;
  /** Clock for the retry time bound (ms); replace it in tests. */
  now?: () => number;
};

interface RetryConfig {
  attempts: number;
  on_status_codes?: number[];
  use_retry_after_headers?: boolean;
  on_stream_failure?: 'end' | 'continue';
  max_continuations?: number;
}

/**
 * Retries a target's upstream call (`retry` in the config): on the listed
 * statuses (default 429, 500, 502, 503, 504, 529) and on network errors, with
 * exponential backoff and jitter, or the provider's `retry-after` when
 * `use_retry_after_headers` is set. Any count is taken; retrying stops once
 * the next wait would end more than `maxRetryTimeMs` after the first attempt
 * began. Sets `x-gateway-retry-attempt-count`.
 */
export function retry(options: RetryOptions = {}): GatewayPlugin {
  const { sleep = defaultSleep, random = Math.random, now = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const backoff = (retryNumber: number) => {
    const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** (retryNumber - 1));
    return ceiling / 2 + random() * (ceiling / 2);
  };
  /** The retry loop, for a target with a retry config. */
  const withRetries = async (next: Dispatch, ctx: RequestContext, target: Target, config: RetryConfig): Promise<GatewayResponse> => {
    const codes = config.on_status_codes ?? DEFAULT_RETRY_STATUS_CODES;
    // The time bound is what keeps a large count in check, so it is measured from the first attempt, waits and attempts included.
    const deadline = now() + opts.maxRetryTimeMs;
    // And the request's own deadline (the routing plugin's): a retry whose wait and typical answer time would end
    // after it is not started.
    const fits = (wait: number) => now() + wait <= deadline && wait + (routing?.typicalLatencyMs(ctx) ?? 0) < deadlineLeft(ctx);
    for (let retries = 0; ; retries++) {
      ctx.responseHeaders['x-gateway-retry-attempt-count'] = String(retries);
      let response: GatewayResponse;
      try {
        response = await next(ctx, target);
      } catch (err) {
        const retriable = err instanceof GatewayError && RETRIABLE_ERRORS.has(err.code);
        if (!retriable || retries >= config.attempts || ctx.signal.aborted) throw err;
        const wait = backoff(retries + 1);
        if (!fits(wait)) throw err;
        await sleep(wait, ctx.signal);
        continue;
      }
      if (!codes.includes(response.status) || retries >= config.attempts) return config.on_stream_failure === 'continue' ? continuedOnStreamFailure(next, ctx, target, config, response) : response;
      let wait = backoff(retries + 1);
      if (config.use_retry_after_headers === true) {
        const asked = retryAfterMs(response.headers);
        if (asked !== null) {
          if (asked > opts.maxRetryAfterMs) return response;
          // Never sooner than the backoff: a provider answering `retry-after: 0` must not turn a large count into a tight loop.
          wait = Math.max(asked, wait);
        }
      }
      if (!fits(wait)) return response;
      discardResponse(response);
      await sleep(wait, ctx.signal);
    }
  };
  let routing: RoutingService | undefined;
  return {
    name: PLUGIN_NAME,
    targetFields: RETRY_FIELDS,
    uses: [ROUTING],
    state: [],
    apply(api) {
      api.onReady(() => {
        routing = api.tryResolve(ROUTING);
      });
      api.addInterceptor(
        PLUGIN_NAME,
        // Not async: a target without retries gets the next dispatch's own promise, no wrapper.
        (next) => (ctx, target) => {
          const config = retryConfig(target);
          return config === null ? next(ctx, target) : withRetries(next, ctx, target, config);
        },
        STAGES.interceptor.RETRY,
      );
    },
  };
}

function retryConfig(target: Target): RetryConfig | null {
  const r = target.retry as RetryConfig | undefined;
  return r !== undefined && typeof r.attempts === 'number' && (r.attempts > 0 || r.on_stream_failure === 'continue') ? r : null;
}

/** A streamed answer whose break, once it started, is continued by the same target (`retry.on_stream_failure: "continue"`). */
function continuedOnStreamFailure(next: Dispatch, ctx: RequestContext, target: Target, config: RetryConfig, response: GatewayResponse): GatewayResponse {
  const idle = target.stream_idle_timeout;
  const route = routeApi(ctx.route!);
  return recoverStream(ctx, response, {
    max: config.max_continuations ?? DEFAULT_MAX_CONTINUATIONS,
    idleMs: typeof idle === 'number' ? idle : 0,
    async next(partial, signal) {
      if (ctx.signal.aborted || signal.aborted || deadlineLeft(ctx) <= 0) return null;
      return runContinuation(ctx, route, target, partial, () => next(ctx, target), signal);
    },
  });
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export default retry;
