import type { ContractMock, Scenario } from './provider-contract.js';
import { sendJson, startRecordingServer, writeEvents } from './mock-http.js';
import { newResponsesState, responsesAnswer } from './responses-mock.js';

/**
 * The contract mock for OpenAI-format upstreams (OpenAI and the compatible
 * family), per OpenAI's API reference (shared/providers/openai.md in this repository). `basePath` is where the API lives
 * under the origin (`/v1` for OpenAI, `/openai/v1` for Groq, …).
 */
export async function startOpenAIContractMock(basePath = '/v1'): Promise<ContractMock> {
  let scenario: Scenario = { kind: 'text' };
  const responses = newResponsesState();
  const rec = await startRecordingServer((_req, res, seen) => {
    const body = seen.body as Record<string, any>;
    if (seen.path === `${basePath}/responses`) {
      return responsesAnswer(res, scenario, body, responses, (r, status, message, headers) => {
        const type = status >= 500 ? 'server_error' : 'invalid_request_error';
        sendJson(r, status, { error: { message, type, param: null, code: null } }, status === 429 ? { ...headers, 'retry-after-ms': '7000' } : headers);
      });
    }
    const stream = body?.stream === true;
    const base = { id: 'chatcmpl-contract', created: 1700000000, model: body?.model ?? 'm', system_fingerprint: 'fp_contract' };
    const usage = { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 0 } };
    const s = scenario;
    if (s.kind === 'error') {
      const headers: Record<string, string> = s.status === 429 ? { 'retry-after': '7', 'retry-after-ms': '7000' } : {};
      const type = s.status === 401 ? 'invalid_request_error' : s.status >= 500 ? 'server_error' : s.status === 429 ? 'requests' : 'invalid_request_error';
      return sendJson(res, s.status, { error: { message: `Mock error ${s.status}`, type, param: null, code: null } }, headers);
    }
    if (!stream) {
      const message =
        s.kind === 'tool_call'
          ? { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }
          : { role: 'assistant', content: 'Hello!', refusal: null };
      const finish = s.kind === 'tool_call' ? 'tool_calls' : s.kind === 'text' ? (s.finish ?? 'stop') : 'stop';
      return sendJson(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage });
    }
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) })}\n\n`;
    const events = [chunk({ role: 'assistant', content: '' })];
    if (s.kind === 'stream_error') {
      events.push(chunk({ content: 'Hel' }), `data: ${JSON.stringify({ error: { message: 'Mock stream failure', type: 'server_error', param: null, code: null } })}\n\n`);
      return writeEvents(res, events);
    }
    if (s.kind === 'tool_call') {
      events.push(
        chunk({ tool_calls: [{ index: 0, id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        chunk({}, 'tool_calls'),
      );
    } else {
      events.push(chunk({ content: 'Hello' }), chunk({ content: '!' }), chunk({}, s.finish ?? 'stop'));
    }
    if (includeUsage) events.push(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
    events.push('data: [DONE]\n\n');
    writeEvents(res, events);
  });
  return {
    baseURL: rec.url + basePath,
    requests: rec.requests,
    next(s) {
      scenario = s;
    },
    close: rec.close,
  };
}
