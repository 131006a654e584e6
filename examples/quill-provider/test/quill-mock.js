// @ts-check
/**
 * A mock Quill upstream for the provider contract: Quill's wire format, on 127.0.0.1 with an
 * ephemeral port, answering each `POST /v1/generate` as the contract's current scenario says
 * (what each scenario must produce: `Scenario` in the kit) and recording every request.
 */
import { sendJson, startRecordingServer, writeEvents } from 'switchyard-gateway/testing';

/** @typedef {import('switchyard-gateway/testing').Scenario} Scenario */

/** The contract's finish → Quill's. */
const FINISH = { stop: 'done', length: 'max_tokens', content_filter: 'filtered' };
/** What the contract expects of usage: a prompt of 9 tokens, 3 of them cached, and 2 completion tokens. */
const TOKENS = { in: 9, out: 2, cached: 3 };

/** Quill's failure kind for an HTTP status. */
const kindOf = (/** @type {number} */ status) => (status === 401 || status === 403 ? 'auth' : status === 429 ? 'quota' : status >= 500 ? 'server' : 'bad_input');

/** @returns {Promise<import('switchyard-gateway/testing').ContractMock>} */
export async function startQuillMock() {
  /** @type {Scenario} */
  let scenario = { kind: 'text' };
  const server = await startRecordingServer((_req, res, seen) => {
    if (seen.method !== 'POST' || seen.path !== '/v1/generate') {
      return sendJson(res, 404, { failure: { reason: `No route ${seen.method} ${seen.path}`, kind: 'bad_input' } });
    }
    const s = scenario;
    if (s.kind === 'error') {
      return sendJson(res, s.status, { failure: { reason: `Mock error ${s.status}`, kind: kindOf(s.status) } }, s.status === 429 ? { 'retry-after': '7' } : {});
    }
    // Quill has no tools: the provider refuses a request with tools, so `tool_call` is never sent; were it, Quill would answer text.
    const finish = s.kind === 'text' ? FINISH[s.finish ?? 'stop'] : 'done';
    const stream = /** @type {{ stream?: unknown } | null} */ (seen.body)?.stream === true;
    if (!stream) return sendJson(res, 200, { text: 'Hello!', finish, tokens: TOKENS });
    const line = (/** @type {unknown} */ value) => `${JSON.stringify(value)}\n`;
    if (s.kind === 'stream_error') {
      return writeEvents(res, [line({ delta: 'Hel' }), line({ failure: { reason: 'Mock stream failure', kind: 'server' } })], 'application/x-ndjson');
    }
    writeEvents(res, [line({ delta: 'Hello' }), line({ delta: '!' }), line({ done: { finish, tokens: TOKENS } })], 'application/x-ndjson');
  });
  return {
    baseURL: `${server.url}/v1`,
    requests: server.requests,
    next(next) {
      scenario = next;
    },
    close: server.close,
  };
}
