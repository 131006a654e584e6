import type { ServerResponse } from 'node:http';
import type { Scenario } from './provider-contract.js';
import { sendJson, writeEvents } from './mock-http.js';

/**
 * OpenAI's Responses API as a native upstream speaks it (shared/providers/openai.md §8 and
 * the API's event grammar), for the mocks of providers that serve it natively (OpenAI, Azure
 * OpenAI). Written by hand, not with the gateway's own writer, so the door's pass-through
 * is checked against an independent rendering. Responses it made are remembered, so a
 * `previous_response_id` it never issued is a 404 as at OpenAI.
 */
export interface ResponsesMockState {
  issued: Set<string>;
  count: number;
}

export const newResponsesState = (): ResponsesMockState => ({ issued: new Set(), count: 0 });

const USAGE = { input_tokens: 9, input_tokens_details: { cached_tokens: 3 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 11 };

export function responsesAnswer(
  res: ServerResponse,
  s: Scenario,
  body: Record<string, any>,
  state: ResponsesMockState,
  error: (res: ServerResponse, status: number, message: string, headers: Record<string, string>) => void,
): void {
  if (s.kind === 'error') return error(res, s.status, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
  const previous = body?.previous_response_id;
  if (typeof previous === 'string' && !state.issued.has(previous)) {
    return sendJson(res, 404, { error: { message: `Previous response with id '${previous}' not found.`, type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } });
  }
  const id = `resp_mock${String(++state.count).padStart(4, '0')}`;
  state.issued.add(id);
  const finish = s.kind === 'text' ? (s.finish ?? 'stop') : 'stop';
  const incomplete = finish === 'length' ? { reason: 'max_output_tokens' } : finish === 'content_filter' ? { reason: 'content_filter' } : null;
  const status = incomplete === null ? 'completed' : 'incomplete';
  const message = { id: `msg_mock${state.count}`, type: 'message', status, role: 'assistant', content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }] };
  const call = { id: `fc_mock${state.count}`, type: 'function_call', status: 'completed', call_id: 'call_MockWeather', name: 'get_weather', arguments: '{"city":"Paris"}' };
  const base = {
    id,
    object: 'response',
    created_at: 1741476542,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: `${body.model}-2025-04-14`,
    output: [] as unknown[],
    parallel_tool_calls: true,
    previous_response_id: previous ?? null,
    reasoning: { effort: null, summary: null },
    store: body.store !== false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: 1,
    truncation: body.truncation ?? 'disabled',
    usage: null as unknown,
    user: null,
    metadata: body.metadata ?? {},
  };
  const done = { ...base, status, incomplete_details: incomplete, output: [s.kind === 'tool_call' ? call : message], usage: USAGE };
  if (body.stream !== true) return sendJson(res, 200, done, { 'x-request-id': 'req_mock_responses' });

  let n = 0;
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`;
  const events = [ev('response.created', { response: base }), ev('response.in_progress', { response: base })];
  if (s.kind === 'tool_call') {
    events.push(
      ev('response.output_item.added', { output_index: 0, item: { ...call, status: 'in_progress', arguments: '' } }),
      ev('response.function_call_arguments.delta', { item_id: call.id, output_index: 0, delta: '{"city":' }),
      ev('response.function_call_arguments.delta', { item_id: call.id, output_index: 0, delta: '"Paris"}' }),
      ev('response.function_call_arguments.done', { item_id: call.id, output_index: 0, arguments: call.arguments }),
      ev('response.output_item.done', { output_index: 0, item: call }),
    );
  } else {
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    events.push(
      ev('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } }),
      ev('response.content_part.added', { item_id: message.id, output_index: 0, content_index: 0, part }),
      ev('response.output_text.delta', { item_id: message.id, output_index: 0, content_index: 0, delta: s.kind === 'stream_error' ? 'Hel' : 'Hello', logprobs: [] }),
    );
    if (s.kind === 'stream_error') {
      events.push(
        ev('error', { code: 'server_error', message: 'Mock stream failure', param: null }),
        ev('response.failed', { response: { ...base, status: 'failed', error: { code: 'server_error', message: 'Mock stream failure' } } }),
      );
      return writeEvents(res, events);
    }
    events.push(
      ev('response.output_text.delta', { item_id: message.id, output_index: 0, content_index: 0, delta: '!', logprobs: [] }),
      ev('response.output_text.done', { item_id: message.id, output_index: 0, content_index: 0, text: 'Hello!', logprobs: [] }),
      ev('response.content_part.done', { item_id: message.id, output_index: 0, content_index: 0, part: { ...part, text: 'Hello!' } }),
      ev('response.output_item.done', { output_index: 0, item: message }),
    );
  }
  events.push(ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: done }));
  writeEvents(res, events);
}
