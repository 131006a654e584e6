import * as v from 'valibot';
import { defineCheck, type GuardrailCheck } from '../../../sdk/index.js';
import { endpointHeaders, endpointUrl, eventRequest } from './http-event.js';
import { parameters } from './params.js';

/** How long one log delivery may take (headers and body) before it is given up. */
export const LOG_TIMEOUT_MS = 10_000;

/** Where delivery failures are reported: the gateway's logger when registered by `guardrailChecks()`. */
export type WarnSink = (fields: Record<string, unknown>, message: string) => void;

class StatusError extends Error {
  constructor(readonly status: number) {
    super(`status ${status}`);
  }
}

const processWarning: WarnSink = (fields, message) => process.emitWarning(`${message} ${JSON.stringify(fields)}`);

/**
 * `default.log { url, headers? }`: sends the event (as the webhook check does)
 * to `url`, fire and forget: the hook never waits for it and the check always
 * passes at once. A failed delivery is logged as one warning, then failures
 * are silent until a delivery succeeds again, so a dead endpoint cannot flood
 * the log. `headers` are never logged. A `url` whose address the outbound
 * policy refuses answers the request 400 `host_not_allowed` before anything is
 * sent; a name found to resolve to a refused address only when connecting
 * is a failed delivery (the check has already passed).
 */
export function createLogCheck(warn: WarnSink = processWarning): GuardrailCheck<{ url: { href: string; origin: string }; headers: Record<string, string>; state: { failing: boolean } }> {
  return defineCheck({
    parameters: v.pipe(
      parameters({ url: endpointUrl, headers: endpointHeaders }),
      // Per config: whether its endpoint is failing, so only the first failure in a row warns.
      v.transform((p) => ({ ...p, state: { failing: false } })),
    ),
    credentials: ['headers'],
    run({ url, headers, state }, input) {
      input.upstream.checkUrl(url.href);
      const request = eventRequest(url.href, headers, input);
      const timeout = AbortSignal.timeout(LOG_TIMEOUT_MS);
      const deliver = async () => {
        const res = await input.upstream.send(request, timeout, LOG_TIMEOUT_MS);
        res.body.discard();
        if (res.status < 200 || res.status >= 300) throw new StatusError(res.status);
      };
      deliver().then(
        () => {
          state.failing = false;
        },
        (err: unknown) => {
          if (state.failing) return;
          state.failing = true;
          const e = err as { code?: string; cause?: { code?: string } };
          const reason =
            err instanceof StatusError
              ? `it answered status ${err.status}`
              : timeout.aborted || e.code === 'upstream_timeout'
                ? `no answer within ${LOG_TIMEOUT_MS} ms`
                : e.code === 'host_not_allowed'
                  ? 'its host resolves only to addresses the outbound policy refuses'
                  : `it could not be reached${e.cause?.code ? ` (${e.cause.code})` : ''}`;
          warn({ check: 'default.log', origin: url.origin, reason }, 'log check: an event could not be delivered; further failures are not logged until a delivery succeeds');
        },
      );
      return { verdict: true, explanation: `The event is being sent to ${url.origin} (not awaited).` };
    },
  });
}

/** The log check reporting failures as process warnings; `guardrailChecks()` registers one that uses the gateway's logger. */
export const log = createLogCheck();
