import type { ServerResponse } from 'node:http';
import type { ContractMock, Scenario } from '../../../server/testing/index.js';
import { COUNTED_TOKENS, sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';

/** Anthropic's error `type` for a status (shared/providers/anthropic.md §5). */
function errorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { type: 'error', error: { type: errorType(status), message }, request_id: 'req_mock01' }, { 'request-id': 'req_mock01', ...headers });
}

/** One SSE event as Anthropic frames it: an `event:` line, the same name in `data.type`, a blank line. */
const event = (data: { type: string } & Record<string, unknown>): string => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

const STOP: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', content_filter: 'refusal' };

/** What the mocks' token-counting endpoints answer. */

const USAGE = { input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 3, output_tokens: 2, service_tier: 'standard' };
const stopOf = (s: Scenario) => (s.kind === 'tool_call' ? 'tool_use' : STOP[s.kind === 'text' ? (s.finish ?? 'stop') : 'stop']!);

/** The Messages answer of a scenario (also what Claude on Bedrock's InvokeModel answers). */
export function anthropicMessage(s: Scenario, model: string): Record<string, unknown> {
  const content =
    s.kind === 'tool_call' ? [{ type: 'tool_use', id: 'toolu_01MockWeather', name: 'get_weather', input: { city: 'Paris' } }] : [{ type: 'text', text: 'Hello!', citations: null }];
  return { id: 'msg_01MockContract', type: 'message', role: 'assistant', model, content, stop_reason: stopOf(s), stop_sequence: null, usage: USAGE };
}

/** The Messages stream events of a scenario, as data objects (each framed by the caller: SSE here, event-stream chunks for Bedrock). */
export function anthropicEvents(s: Scenario, model: string): Array<{ type: string } & Record<string, unknown>> {
  const events: Array<{ type: string } & Record<string, unknown>> = [
    { type: 'message_start', message: { id: 'msg_01MockContract', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...USAGE, output_tokens: 1 } } },
  ];
  if (s.kind === 'stream_error') {
    events.push(
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'error', error: { type: 'overloaded_error', message: 'Mock stream failure' } },
    );
    return events;
  }
  if (s.kind === 'tool_call') {
    events.push(
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_01MockWeather', name: 'get_weather', input: {} } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "Pa' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: 'ris"}' } },
      { type: 'content_block_stop', index: 0 },
    );
  } else {
    events.push(
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '!' } },
      { type: 'content_block_stop', index: 0 },
    );
  }
  events.push({ type: 'message_delta', delta: { stop_reason: stopOf(s), stop_sequence: null }, usage: { output_tokens: 2 } }, { type: 'message_stop' });
  return events;
}

/**
 * The contract mock for Anthropic's Messages API (POST /v1/messages), per
 * shared/providers/anthropic.md: `x-api-key` and `anthropic-version` are
 * required (401 authentication_error otherwise), `max_tokens` is required (400),
 * usage is input 6 + cache read 3 (prompt 9, cached 3) and output 2, streams use
 * named events with a ping, cumulative usage in message_delta and no [DONE].
 */
export async function startAnthropicContractMock(): Promise<ContractMock> {
  let scenario: Scenario = { kind: 'text' };
  const rec = await startRecordingServer((req, res, seen) => {
    if (seen.method === 'POST' && seen.path === '/v1/messages/count_tokens') {
      if (!req.headers['x-api-key']) return sendError(res, 401, 'x-api-key header is required');
      return sendJson(res, 200, { input_tokens: COUNTED_TOKENS });
    }
    if (seen.method !== 'POST' || seen.path !== '/v1/messages') return sendError(res, 404, 'Not found');
    if (!req.headers['x-api-key']) return sendError(res, 401, 'x-api-key header is required');
    if (!req.headers['anthropic-version']) return sendError(res, 401, 'anthropic-version header is required');
    const body = seen.body as Record<string, any> | null;
    if (body === null || typeof body !== 'object') return sendError(res, 400, 'Request body must be JSON');
    if (typeof body.max_tokens !== 'number') return sendError(res, 400, 'max_tokens: Field required');

    const s = scenario;
    if (s.kind === 'error') {
      return sendError(res, s.status, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
    }
    const model = typeof body.model === 'string' ? body.model : 'claude-mock';
    if (body.stream !== true) return sendJson(res, 200, anthropicMessage(s, model), { 'request-id': 'req_mock01' });
    const events = anthropicEvents(s, model).map(event);
    writeEvents(res, events);
  });
  return {
    baseURL: rec.url,
    requests: rec.requests,
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}
