import * as v from 'valibot';
import { type CheckResult, defineCheck, GatewayError, plainObject, type UpstreamBody } from '../../../sdk/index.js';
import { endpointHeaders, endpointUrl, eventRequest } from './http-event.js';
import { parameters } from './params.js';

/** Largest webhook answer read; a transformed request may be large, but not unbounded. */
export const MAX_WEBHOOK_ANSWER_BYTES = 32 * 1024 * 1024;

/** What the webhook must answer. */
const AnswerSchema = v.object(
  {
    verdict: v.boolean('verdict must be true or false'),
    explanation: v.optional(v.string('explanation must be a string')),
    data: v.optional(v.unknown()),
    transformed: v.optional(plainObject('transformed must be a JSON object (the replacement body)')),
  },
  (issue) => (issue.expected === 'Object' ? 'the answer must be a JSON object' : `${issue.expected?.replace(/^"|"$/g, '')} is required`),
);

class TooLarge extends Error {}

/** A refused answer is not read: its request is stopped (the webhook's connection is not worth draining). */
function discard(body: UpstreamBody): void {
  body.abort();
}

async function readLimited(body: UpstreamBody, limit: number): Promise<string> {
  try {
    return await body.text(limit);
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'upstream_invalid_response') throw new TooLarge(`its answer is larger than ${limit} bytes`);
    throw err;
  }
}

/**
 * `default.webhook { url, headers?, timeoutMs?, failOpen?, streamEvery? }`: POSTs
 * `{ phase, route, model, text, request, response, metadata }` as JSON to
 * `url` and takes the verdict from the answer,
 * `{ verdict, explanation?, data?, transformed? }`, where `transformed` is a
 * replacement request (input) or answer (output) body. A timeout (`timeoutMs`,
 * default 3000, at most 30000, for the whole exchange), a network error, a
 * non-2xx status or an answer that is not that JSON is a failure of the
 * webhook: with `failOpen` the check passes (saying it failed open), else it
 * fails. `headers` are sent but never logged or reported. A `url` on a host
 * the gateway's outbound policy refuses (by address, or by what its name
 * resolves to) is neither: the request is answered 400 `host_not_allowed`.
 */
export const webhook = defineCheck({
  parameters: parameters({
    url: endpointUrl,
    headers: endpointHeaders,
    timeoutMs: v.optional(
      v.pipe(v.number('timeoutMs must be a number'), v.integer('timeoutMs must be a whole number of milliseconds'), v.minValue(1, 'timeoutMs must be at least 1'), v.maxValue(30_000, 'timeoutMs must be at most 30000')),
      3000,
    ),
    failOpen: v.optional(v.boolean('failOpen must be true or false'), false),
    streamEvery: v.optional(
      v.pipe(v.number('streamEvery must be a number'), v.integer('streamEvery must be a whole number of characters'), v.minValue(16, 'streamEvery must be at least 16')),
    ),
  }),
  credentials: ['headers'],
  // On a stream, with `streamEvery`: the text so far, every that many new characters (a verdict on part of the answer
  // is taken as final). Without it, once, on the whole text.
  stream: (p) => (p.streamEvery === undefined ? null : { scope: 'all', every: p.streamEvery }),
  async run({ url, headers, timeoutMs, failOpen }, input) {
    const failed = (reason: string, status: number | null = null): CheckResult =>
      failOpen
        ? { verdict: true, explanation: `The webhook at ${url.origin} failed (${reason}); failed open.`, data: { failedOpen: true, reason, status } }
        : { verdict: false, explanation: `The webhook at ${url.origin} failed (${reason}); failed closed.`, data: { failedOpen: false, reason, status } };

    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([input.signal, timeout]);
    let text: string;
    let status: number;
    try {
      const res = await input.upstream.send(eventRequest(url.href, headers, input), signal, timeoutMs);
      status = res.status;
      if (status < 200 || status >= 300) {
        discard(res.body);
        return failed(`it answered status ${status}`, status);
      }
      text = await readLimited(res.body, MAX_WEBHOOK_ANSWER_BYTES);
    } catch (err) {
      // A host the outbound policy refuses is the config's error, answered as a 400, never a verdict.
      if (err instanceof GatewayError && err.code === 'host_not_allowed') throw err;
      if (input.signal.aborted) return { verdict: false, explanation: 'The client went away before the webhook answered.', data: { failedOpen: false, reason: 'aborted', status: null } };
      if (timeout.aborted || (err as { code?: string })?.code === 'upstream_timeout') return failed(`it did not answer within ${timeoutMs} ms`);
      if (err instanceof TooLarge) return failed(err.message);
      const code = (err as { code?: string; cause?: { code?: string } })?.cause?.code ?? (err as { code?: string })?.code;
      return failed(`it could not be reached${code ? ` (${code})` : ''}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return failed('its answer is not JSON', status);
    }
    const answer = v.safeParse(AnswerSchema, json);
    if (!answer.success) return failed(`its answer is not { verdict, explanation?, transformed? }: ${answer.issues[0].message}`, status);
    const { verdict, explanation, data, transformed } = answer.output;
    return {
      verdict,
      explanation: explanation ?? `The webhook ${verdict ? 'passed' : 'failed'} the ${input.phase === 'input' ? 'request' : 'answer'}.`,
      data: { status, ...(data === undefined ? {} : { webhook: data }) },
      ...(transformed === undefined ? {} : { transformed }),
    };
  },
});
