import * as v from 'valibot';
import { credentialDigest, defineErrors, fieldSchema as f, GatewayError, parseOptions, redisConnectionOf, STAGES, type Dispatch, type GatewayPlugin, type GatewayResponse, type RequestContext, type Target, type TargetField, targetIdentity, TENANCY, tenantOf } from '../../sdk/index.js';
import { redisBreakerState } from './redis-state.js';
import { memoryBreakerState, type Admission, type BreakerState } from './state.js';

export const PLUGIN_NAME = 'breaker';

/** The config field this plugin reads: `cb_config`, inherited by every target that sets none, no part of what is answered. */
export const BREAKER_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  cb_config: {
    schema: f.strictObject({
      // A number (spec), at least 1. Failures are counted whole and the breaker opens when the count reaches the
      // threshold (count >= threshold), so a fractional threshold opens at the next whole count: 2.5 after 3 failures.
      failure_threshold: f.number(1),
      cooldown_interval: f.number(30_000),
      // Absent means "status codes above 500" (spec default); applied by the interceptor, not here.
      failure_status_codes: v.optional(f.list(f.integer(100, 599), 'HTTP status codes')),
    }),
    inherit: 'always',
    affectsAnswer: false,
  },
});

/** The answer while a breaker is open: 503, so clients and fallbacks treat it as the target being down. */
const breakerError = defineErrors({
  circuit_open: { status: 503, type: 'server_error' },
});
export const BREAKER_ERRORS = breakerError.codes;

/** Gateway errors that count as failures: the target is down, slow or garbled. */
const FAILURE_ERRORS = new Set(['upstream_unreachable', 'upstream_invalid_response', 'upstream_timeout', 'request_timeout']);

const OptionsSchema = v.strictObject({
  /** Where state lives: `memory` (this process) or `redis` (needs the `redis` store plugin). */
  store: v.optional(v.picklist(['memory', 'redis']), 'memory'),
});

export type BreakerOptions = v.InferInput<typeof OptionsSchema> & {
  /** Clock; replace it in tests. */
  now?: () => number;
};

interface CbConfig {
  failure_threshold: number;
  cooldown_interval: number;
  failure_status_codes?: number[];
}

/** The store entry a `redis` store plugin registers. */
/**
 * The circuit breaker (`cb_config`), per target as called and per workspace: the workspace the
 * request acts in, provider, base URL, model and credential identity. Closed → open once the failures reach `failure_threshold` (a fraction rounds up)
 * (a status in `failure_status_codes`, default above 500; a network error; a
 * timeout). Open → the call fails at once with 503 `circuit_open`, which
 * fallback skips. After `cooldown_interval` one trial goes through: success
 * closes the breaker, failure re-opens it. A store outage fails open: traffic
 * flows and a warning is logged.
 */
export function breaker(options: BreakerOptions = {}): GatewayPlugin {
  const { now = Date.now, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  return {
    name: PLUGIN_NAME,
    // The workspace a request acts in, which its state is kept under (sdk/tenancy.ts).
    uses: [TENANCY],
    targetFields: BREAKER_FIELDS,
    errorCodes: BREAKER_ERRORS,
    state: [
      { name: 'circuits', scope: 'workspace', keyedBy: 'Failures and open circuits: keyed by the workspace the request acts in and the target as called (provider, host, model, credential digest).' },
    ],
    apply(api) {
      let state: BreakerState = memoryBreakerState();
      const credentials = credentialDigest([...api.targetFields.credentials()]);
      const tenant = tenantOf(api);
      if (opts.store === 'redis') {
        api.onReady(() => {
          state = redisBreakerState(redisConnectionOf(api, 'redis', 'breaker'));
        });
      }
      let warnedAt = 0;
      const degraded = (err: unknown) => {
        if (now() - warnedAt > 60_000) {
          warnedAt = now();
          api.logger.warn({ err }, 'breaker store unavailable; breakers fail open');
        }
      };

      const guarded = async (next: Dispatch, ctx: RequestContext, target: Target, cb: CbConfig): Promise<GatewayResponse> => {
        // The target as called (interceptors see it resolved), in the workspace the request acts in: one
        // workspace's failures never open another's breaker, whatever their slugs are named.
        const owner = tenant(ctx);
        const key = targetIdentity(ctx, target, credentials, typeof owner === 'string' ? owner : await owner);
        let admission: Admission;
        try {
          admission = await state.admit(key, cb.cooldown_interval, now());
        } catch (err) {
          degraded(err);
          return next(ctx, target);
        }
        if (admission.state === 'open') {
          const seconds = Math.max(1, Math.ceil(admission.retryInMs / 1000));
          throw breakerError('circuit_open', `The circuit breaker for provider "${target.provider}" (target ${ctx.targetPath}) is open after repeated failures; retry in ${seconds} s.`, {
            headers: { 'retry-after': String(seconds) },
          });
        }
        const trial = admission.state === 'trial';
        const record = (failed: boolean) =>
          (failed ? state.failure(key, cb.failure_threshold, now(), trial) : trial || (admission as { failures: number }).failures > 0 ? state.success(key) : Promise.resolve()).catch(degraded);
        try {
          const response = await next(ctx, target);
          await record(isFailureStatus(response.status, cb.failure_status_codes));
          return response;
        } catch (err) {
          const failed = err instanceof GatewayError && FAILURE_ERRORS.has(err.code);
          // An error that says nothing about the target (a bad request, a client gone) must not hold the trial: give it back.
          await (failed ? record(true) : trial ? state.release(key).catch(degraded) : Promise.resolve());
          throw err;
        }
      };

      api.addInterceptor(
        PLUGIN_NAME,
        // Not async at the top: a target without a breaker gets the next dispatch's own promise, no wrapper.
        (next) => (ctx, target) => {
          const cb = target.cb_config as CbConfig | undefined;
          return cb === undefined ? next(ctx, target) : guarded(next, ctx, target, cb);
        },
        STAGES.interceptor.BREAKER,
      );
    },
  };
}

/** Statuses counted as failures: the configured list, else anything above 500 (spec default). */
export function isFailureStatus(status: number, codes: readonly number[] | undefined): boolean {
  return codes !== undefined ? codes.includes(status) : status > 500;
}

export default breaker;
