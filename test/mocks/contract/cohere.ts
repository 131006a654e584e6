import type { ServerResponse } from 'node:http';
import type { ContractMock, Scenario } from '../../../server/testing/index.js';
import { sendJson, startRecordingServer, writeEvents } from '../../../server/testing/index.js';

/**
 * Cohere v2 mock (shared/providers/cohere.md): `/v2/chat` (JSON, or SSE with named
 * events whose `data.type` repeats the name, no [DONE]), `/v2/embed`, `/v2/rerank`;
 * `Authorization: Bearer <key>`; errors `{"message": …}`. Usage: tokens input 9
 * (3 of them cached), output 2. A mid-stream failure is a message-end with
 * `finish_reason: ERROR` and `delta.error`.
 */

export const COHERE_KEY = 'co-test-key';

const FINISH: Record<string, string> = { stop: 'COMPLETE', length: 'MAX_TOKENS', content_filter: 'ERROR_TOXIC' };

const event = (data: { type: string } & Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

function error(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  sendJson(res, status, { id: 'err-1', message }, headers);
}

export async function startCohereContractMock(): Promise<ContractMock> {
  let scenario: Scenario = { kind: 'text' };
  const rec = await startRecordingServer((req, res, seen) => {
    if (req.headers.authorization !== `Bearer ${COHERE_KEY}`) return error(res, 401, 'invalid api token');
    const body = seen.body as Record<string, any>;
    if (seen.method !== 'POST') return error(res, 404, 'not found');
    if (seen.path === '/v2/embed') {
      if (!Array.isArray(body.texts) || typeof body.input_type !== 'string') return error(res, 400, 'invalid request: texts and input_type are required');
      return sendJson(res, 200, {
        id: 'emb-1',
        embeddings: { float: body.texts.map((_: unknown, i: number) => [i, 0.5, -0.5]) },
        texts: body.texts,
        meta: { api_version: { version: '2' }, billed_units: { input_tokens: 5 } },
        response_type: 'embeddings_by_type',
      });
    }
    if (seen.path === '/v2/rerank') {
      if (!Array.isArray(body.documents) || body.documents.some((d: unknown) => typeof d !== 'string')) return error(res, 400, 'invalid request: documents must be strings');
      if (body.query === 'fail') return error(res, 429, 'You are using a Trial key', { 'retry-after': '3' });
      const scored = body.documents.map((d: string, index: number) => ({ index, relevance_score: Math.round((1 / (1 + d.length)) * 1e6) / 1e6 }));
      scored.sort((a: any, b: any) => b.relevance_score - a.relevance_score);
      const results = typeof body.top_n === 'number' ? scored.slice(0, body.top_n) : scored;
      return sendJson(res, 200, { id: '07734bd2-2473-4f07-94e1-0d9f0e6843cf', results, meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } } });
    }
    if (seen.path !== '/v2/chat') return error(res, 404, 'not found');
    if (!Array.isArray(body.messages)) return error(res, 400, 'invalid request: messages is required');

    const s = scenario;
    if (s.kind === 'error') return error(res, s.status, `Mock error ${s.status}`, s.status === 429 ? { 'retry-after': '7' } : {});
    const finish = s.kind === 'tool_call' ? 'TOOL_CALL' : FINISH[s.kind === 'text' ? (s.finish ?? 'stop') : 'stop']!;
    const usage = { billed_units: { input_tokens: 6, output_tokens: 2 }, tokens: { input_tokens: 9, output_tokens: 2 }, cached_tokens: 3 };
    const call = { id: 'get_weather_1byjy32y4hvq', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    if (body.stream !== true) {
      const message =
        s.kind === 'tool_call'
          ? { role: 'assistant', tool_plan: 'I will look up the weather.', tool_calls: [call] }
          : { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] };
      return sendJson(res, 200, { id: 'c14c80c3-18eb-4519-9460-6c92edd8cfb4', finish_reason: finish, message, usage });
    }
    const events = [event({ id: '29f14a5a-11de-4cae-9800-25e4747408ea', type: 'message-start', delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } } })];
    if (s.kind === 'tool_call') {
      events.push(
        event({ type: 'tool-plan-delta', delta: { message: { tool_plan: 'I will look up the weather.' } } }),
        event({ type: 'tool-call-start', index: 0, delta: { message: { tool_calls: { id: call.id, type: 'function', function: { name: 'get_weather', arguments: '' } } } } }),
        event({ type: 'tool-call-delta', index: 0, delta: { message: { tool_calls: { function: { arguments: '{"city":' } } } } }),
        event({ type: 'tool-call-delta', index: 0, delta: { message: { tool_calls: { function: { arguments: '"Paris"}' } } } } }),
        event({ type: 'tool-call-end', index: 0 }),
      );
    } else {
      events.push(event({ type: 'content-start', index: 0, delta: { message: { content: { type: 'text', text: '' } } } }));
      if (s.kind === 'stream_error') {
        events.push(
          event({ type: 'content-delta', index: 0, delta: { message: { content: { text: 'Hel' } } } }),
          event({ type: 'message-end', delta: { finish_reason: 'ERROR', error: 'Mock stream failure', usage } }),
        );
        return writeEvents(res, events);
      }
      events.push(
        event({ type: 'content-delta', index: 0, delta: { message: { content: { text: 'Hello' } } } }),
        event({ type: 'content-delta', index: 0, delta: { message: { content: { text: '!' } } } }),
        event({ type: 'content-end', index: 0 }),
      );
    }
    events.push(event({ type: 'message-end', delta: { finish_reason: finish, usage } }));
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
