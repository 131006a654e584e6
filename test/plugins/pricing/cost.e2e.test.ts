import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeMessage } from '../../../plugins/providers/bedrock/eventstream.js';
import { sendJson, startRecordingServer } from '../../../server/testing/index.js';
import { startTestServer } from '../../helpers/gateway.js';
import { sendAndRead } from './stored-entry.js';

/*
 * Costs through the real server, each checked against the providers' public list prices written
 * here (not read from the price list under test), per million tokens:
 * - Claude Sonnet 4.5 (anthropic.com/pricing; Bedrock's global inference the same): input 3, cache
 *   read 0.30, 5-minute cache write 3.75, 1-hour cache write 6, output 15;
 * - Gemini 2.5 Pro (ai.google.dev/pricing), prompts over 200k tokens: input 2.50, cache read 0.25,
 *   output (thinking included) 15;
 * - GPT-5 (openai.com/api/pricing): input 1.25, cached input 0.125, output 10.
 * Every door and both deliveries (stream and JSON) must store the same cost.
 */

/** Anthropic's usage of the Claude answers: 1,000 plain input, 2,000 read, 3,000 written (1,000 for an hour), 500 out; its `service_tier` does not change the price (only OpenAI's and Azure's tiers do). */
const CLAUDE_USAGE = { service_tier: 'priority', input_tokens: 1000, cache_read_input_tokens: 2000, cache_creation_input_tokens: 3000, cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 1000 }, output_tokens: 500 };
const CLAUDE_COST = (1000 * 3 + 2000 * 0.3 + 2000 * 3.75 + 1000 * 6 + 500 * 15) / 1e6;
/** Gemini's usage: a 250,000-token prompt (50,000 cached), 800 answer and 200 thinking tokens. */
const GEMINI_USAGE = { promptTokenCount: 250_000, cachedContentTokenCount: 50_000, candidatesTokenCount: 800, thoughtsTokenCount: 200, totalTokenCount: 251_000 };
const GEMINI_COST = (200_000 * 2.5 + 50_000 * 0.25 + 1000 * 15) / 1e6;
/** OpenAI's usage: 1,000 prompt (200 cached), 500 completion (300 reasoning). */
const GPT5_USAGE = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 200 }, completion_tokens_details: { reasoning_tokens: 300 } };
const GPT5_COST = (800 * 1.25 + 200 * 0.125 + 500 * 10) / 1e6;

type Up = Awaited<ReturnType<typeof startRecordingServer>>;
let up: Up;
let gw: Awaited<ReturnType<typeof startTestServer>>;

const sse = (events: Array<[string | null, unknown]>) => events.map(([name, data]) => `${name === null ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join('');

beforeAll(async () => {
  up = await startRecordingServer((req, res, seen) => {
    const body = (seen.body ?? {}) as Record<string, any>;
    const path = req.url!;
    if (path.startsWith('/anthropic/v1/messages')) {
      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'Cached.' }], stop_reason: 'end_turn', stop_sequence: null, usage: CLAUDE_USAGE };
      if (body.stream !== true) return sendJson(res, 200, message);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const { output_tokens: _o, ...start } = CLAUDE_USAGE;
      return res.end(
        sse([
          ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...start, output_tokens: 1 } } }],
          ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
          ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Cached.' } }],
          ['content_block_stop', { type: 'content_block_stop', index: 0 }],
          ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 500 } }],
          ['message_stop', { type: 'message_stop' }],
        ]),
      );
    }
    if (path.startsWith('/gemini/')) {
      const answer = { candidates: [{ content: { role: 'model', parts: [{ text: 'Long.' }] }, finishReason: 'STOP' }], usageMetadata: GEMINI_USAGE, modelVersion: 'gemini-2.5-pro' };
      if (!path.includes('streamGenerateContent')) return sendJson(res, 200, answer);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return res.end(sse([[null, { ...answer, candidates: [{ content: { role: 'model', parts: [{ text: 'Lo' }] } }], usageMetadata: { promptTokenCount: 250_000 } }], [null, { ...answer, candidates: [{ content: { role: 'model', parts: [{ text: 'ng.' }] }, finishReason: 'STOP' }] }]]));
    }
    if (path.startsWith('/bedrock/')) {
      const usage = { inputTokens: 1000, cacheReadInputTokens: 2000, cacheWriteInputTokens: 3000, cacheDetails: [{ ttl: '5m', inputTokens: 2000 }, { ttl: '1h', inputTokens: 1000 }], outputTokens: 500, totalTokens: 6500 };
      if (!path.endsWith('converse-stream')) return sendJson(res, 200, { output: { message: { role: 'assistant', content: [{ text: 'Cached.' }] } }, stopReason: 'end_turn', usage, metrics: { latencyMs: 5 } });
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      const frame = (type: string, payload: unknown) => Buffer.from(encodeMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, JSON.stringify(payload)));
      return res.end(
        Buffer.concat([
          frame('messageStart', { role: 'assistant' }),
          frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Cached.' } }),
          frame('contentBlockStop', { contentBlockIndex: 0 }),
          frame('messageStop', { stopReason: 'end_turn' }),
          frame('metadata', { usage, metrics: { latencyMs: 5 } }),
        ]),
      );
    }
    if (path.startsWith('/openai/v1/chat/completions')) {
      const model = String(body.model);
      const answer = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model, service_tier: 'default', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop', logprobs: null }], usage: GPT5_USAGE };
      if (body.stream !== true) return sendJson(res, 200, answer);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: unknown, finish: string | null) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model, service_tier: 'default', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
      const events: Array<[null, unknown]> = [[null, chunk({ role: 'assistant', content: 'Hi.' }, null)], [null, chunk({}, 'stop')]];
      // As OpenAI does: the usage chunk only when asked.
      if (body.stream_options?.include_usage === true) events.push([null, { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model, service_tier: 'default', choices: [], usage: GPT5_USAGE }]);
      events.push([null, '[DONE]']);
      return res.end(sse(events));
    }
    sendJson(res, 404, { error: { message: `no route ${path}`, type: 'invalid_request_error', param: null, code: null } });
  });
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

let traces = 0;

/** Sends one request and returns the stored entry (GET /v1/logs/{id}) and the answer's text. */
const priced = (path: string, target: Record<string, unknown>, body: Record<string, unknown>) => sendAndRead(gw.url, path, target, body, `cost-e2e-${++traces}`);

const anthropic = () => ({ provider: 'anthropic', api_key: 'sk-ant-cost', custom_host: `${up.url}/anthropic` });
const ask = (extra: Record<string, unknown> = {}) => ({ messages: [{ role: 'user', content: 'Use the cache.' }], max_tokens: 600, ...extra });

describe('a Claude request with a 1-hour cache write', () => {
  for (const stream of [false, true]) {
    test(`chat completions, ${stream ? 'streamed' : 'JSON'}: the writes at their rates, shown to the client as cache_write_tokens`, async () => {
      const { entry, text, status } = await priced('/v1/chat/completions', anthropic(), ask({ model: 'claude-sonnet-4-5-20250929', stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }));
      expect(status).toBe(200);
      expect(entry.cost).toBeCloseTo(CLAUDE_COST, 12);
      expect([entry.cost_status, entry.prompt_tokens, entry.cached_tokens, entry.cache_write_tokens, entry.cache_write_1h_tokens]).toEqual(['priced', 6000, 2000, 3000, 1000]);
      expect(entry.price.components.map((c: { name: string; tokens: number; rate: number }) => [c.name, c.tokens, c.rate])).toEqual([
        ['input', 1000, 3],
        ['cache_read', 2000, 0.3],
        ['cache_write', 2000, 3.75],
        ['cache_write_1h', 1000, 6],
        ['output', 500, 15],
      ]);
      expect(entry.price.price_id).toMatch(/^anthropic\/claude-sonnet-4-5/);
      expect(entry.price.version).toMatch(/^genai-prices/);
      expect(text).toContain('"cache_write_tokens":3000');
    });
  }

  test('the Messages door (native) and the Responses door (translated) store the same cost', async () => {
    for (const stream of [false, true]) {
      const messages = await priced('/v1/messages', anthropic(), ask({ model: 'claude-sonnet-4-5-20250929', stream }));
      expect(messages.entry.cost, `messages stream=${stream}`).toBeCloseTo(CLAUDE_COST, 12);
      const responses = await priced('/v1/responses', anthropic(), { model: 'claude-sonnet-4-5-20250929', input: 'Use the cache.', max_output_tokens: 600, stream });
      expect(responses.entry.cost, `responses stream=${stream}`).toBeCloseTo(CLAUDE_COST, 12);
    }
  });

  test('Bedrock Converse, its 1-hour writes from cacheDetails, JSON and streamed', async () => {
    const bedrock = { provider: 'bedrock', aws_access_key_id: 'AKIDCOST', aws_secret_access_key: 'secret-cost', aws_region: 'us-east-1', custom_host: `${up.url}/bedrock` };
    for (const stream of [false, true]) {
      const { entry, status } = await priced('/v1/chat/completions', bedrock, ask({ model: 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', stream }));
      expect(status).toBe(200);
      expect([entry.cost_status, entry.cache_write_tokens, entry.cache_write_1h_tokens]).toEqual(['priced', 3000, 1000]);
      expect(entry.cost, `stream=${stream}`).toBeCloseTo(CLAUDE_COST, 12);
    }
  });
});

describe('a Gemini 2.5 Pro prompt over 200k tokens', () => {
  test('every token at the long-context rates, JSON and streamed alike', async () => {
    const google = { provider: 'google', api_key: 'goog-cost', custom_host: `${up.url}/gemini` };
    for (const stream of [false, true]) {
      const { entry, status } = await priced('/v1/chat/completions', google, ask({ model: 'gemini-2.5-pro', stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }));
      expect(status).toBe(200);
      expect(entry.price.tier_above).toBe(200_000);
      expect(entry.cost, `stream=${stream}`).toBeCloseTo(GEMINI_COST, 12);
      expect(entry.reasoning_tokens).toBe(200);
    }
  });
});

describe('OpenAI', () => {
  const openai = () => ({ provider: 'openai', api_key: 'sk-cost', custom_host: `${up.url}/openai/v1` });

  test('an unlisted model costs null, unpriced, with the reason; never another model\'s price', async () => {
    for (const model of ['gpt-5.2-codex-max-preview', 'my-unlisted-model']) {
      const { entry } = await priced('/v1/chat/completions', openai(), ask({ model }));
      expect([entry.cost, entry.cost_status, entry.price.price_id], model).toEqual([null, 'unpriced', null]);
      expect(entry.price.reason).toContain(model);
    }
  });

  test('a stream without include_usage stores the real usage and cost, as the same request answered in JSON does', async () => {
    const json = await priced('/v1/chat/completions', openai(), ask({ model: 'gpt-5' }));
    const stream = await priced('/v1/chat/completions', openai(), ask({ model: 'gpt-5', stream: true }));
    expect(json.entry.cost).toBeCloseTo(GPT5_COST, 12);
    expect(stream.entry.cost).toBeCloseTo(GPT5_COST, 12);
    expect([stream.entry.tokens_estimated, stream.entry.cached_tokens, stream.entry.reasoning_tokens]).toEqual([false, 200, 300]);
    // The client did not ask for the usage chunk: it gets none.
    expect(stream.text).not.toContain('"usage"');
    expect(stream.text).toContain('[DONE]');
  });
});
