import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../../plugins/config/index.js';
import { openaiCompatible } from '../../../../plugins/providers/openai-compatible/index.js';
import { compatibleStream, errorFields, mapFinish, nineCharId } from '../../../../plugins/providers/openai-compatible/normalize.js';
import { RequestContext, createLogger } from '../../../../core/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { sendJson, startRecordingServer, writeEvents } from '../../../../server/testing/index.js';

describe('normalisation units', () => {
  test('finish reasons: OpenAI values kept, quirks mapped, unknown → stop, null kept', () => {
    expect(mapFinish('length', undefined)).toBe('length');
    expect(mapFinish('eos', { finishReasons: { eos: 'stop' } })).toBe('stop');
    expect(mapFinish('model_length', { finishReasons: { model_length: 'length' } })).toBe('length');
    expect(mapFinish('weird', undefined)).toBe('stop');
    expect(mapFinish(null, undefined)).toBeNull();
  });

  test.each([
    ['nested OpenAI-style', { error: { message: 'm', type: 't', param: null, code: 'c' } }, { message: 'm', type: 't', code: 'c' }],
    ['Mistral flat', { object: 'error', message: 'Tool call id was x', type: 'invalid_request_error', param: null, code: '3280' }, { message: 'Tool call id was x', type: 'invalid_request_error', code: '3280' }],
    ['OpenRouter numeric code', { error: { code: 402, message: 'Insufficient credits' } }, { message: 'Insufficient credits', type: 'openrouter_error', code: '402' }],
    ['not an error body', 'oops', { message: 'The provider openrouter answered 502.', type: 'upstream_error', code: null }],
  ])('error shape: %s', (_name, body, expected) => {
    expect(errorFields('openrouter', 502, body)).toMatchObject(expected);
  });

  test('nine-character tool ids are deterministic and alphanumeric', () => {
    const id = nineCharId('call_0fypS1hVXabc');
    expect(id).toMatch(/^[a-zA-Z0-9]{9}$/);
    expect(nineCharId('call_0fypS1hVXabc')).toBe(id);
    expect(nineCharId('abcDEF123')).toBe('abcDEF123');
  });

  test('a normalised stream: finish mapped, groq usage folded into a usage chunk, comments skipped, [DONE] added', () => {
    const ctx = new RequestContext('POST', '/v1/chat/completions', {}, new AbortController().signal, createLogger({ level: 'silent' }));
    const t = compatibleStream({ name: 'groq', baseURL: 'x', auth: 'bearer', routes: ['chat.completions'], quirks: { usage: 'groq', finishReasons: { eos: 'stop' } } }, ctx, true);
    const input =
      ': OPENROUTER PROCESSING\n\n' +
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n' +
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"eos"}],"x_groq":{"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}}\n\n';
    let out = '';
    for (let i = 0; i < input.length; i += 5) out += t.push(Buffer.from(input.slice(i, i + 5)));
    out += t.end();
    const events = out.trim().split('\n\n');
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(events[1]!.slice(6)).choices[0].finish_reason).toBe('stop');
    expect(JSON.parse(events[2]!.slice(6))).toMatchObject({ choices: [], usage: { total_tokens: 5 } });
    expect(ctx.usage?.total_tokens).toBe(5);
  });
});

describe('quirks through the gateway', () => {
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  let mock: Awaited<ReturnType<typeof startRecordingServer>>;
  let answer: (body: any) => [number, unknown] | 'stream' = () => [200, {}];

  beforeAll(async () => {
    mock = await startRecordingServer((_req, res, seen) => {
      const a = answer(seen.body);
      if (a === 'stream') {
        return writeEvents(res, [
          'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}\n\n',
          'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"eos"}]}\n\n',
        ]);
      }
      sendJson(res, a[0], a[1]);
    });
    gw = await serveGateway({ plugins: [config(), openaiCompatible()] });
  });
  afterAll(async () => {
    await gw.close();
    await mock.close();
  });

  const send = (provider: string, body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider, api_key: 'k', custom_host: mock.url }) },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    });
  const completion = (finish: string, usage: object = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }) => ({
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: finish }],
    usage,
  });

  test('Together: eos becomes stop, streamed and not', async () => {
    answer = () => [200, completion('eos')];
    expect((await (await send('together-ai', {})).json()).choices[0].finish_reason).toBe('stop');
    answer = () => 'stream';
    const text = await (await send('together-ai', { stream: true })).text();
    expect(text).toContain('"finish_reason":"stop"');
    expect(text).not.toContain('eos');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  test('DeepSeek: cache hits become cached_tokens', async () => {
    answer = () => [200, completion('stop', { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_cache_hit_tokens: 6, prompt_cache_miss_tokens: 4 })];
    const body = await (await send('deepseek', {})).json();
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(6);
  });

  test('Mistral: flat errors are wrapped with the status kept; tool ids rewritten consistently', async () => {
    answer = () => [400, { object: 'error', message: 'Bad tool id', type: 'invalid_request_error', param: null, code: '3280' }];
    const res = await send('mistral-ai', {});
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { message: 'Bad tool id', type: 'invalid_request_error', param: null, code: '3280' } });

    answer = () => [200, completion('stop')];
    await send('mistral-ai', {
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0fypS1hVXabc', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_0fypS1hVXabc', content: 'r' },
      ],
    });
    const sent = mock.requests.at(-1)!.body;
    const id = sent.messages[1].tool_calls[0].id;
    expect(id).toMatch(/^[a-zA-Z0-9]{9}$/);
    expect(sent.messages[2].tool_call_id).toBe(id);
  });

  test('Groq: refused fields dropped, n > 1 a 400 naming n and groq', async () => {
    answer = () => [200, completion('stop')];
    await send('groq', { logprobs: true, top_logprobs: 2, logit_bias: { '1': 1 }, temperature: 0.5 });
    const sent = mock.requests.at(-1)!.body;
    expect(sent.logprobs).toBeUndefined();
    expect(sent.top_logprobs).toBeUndefined();
    expect(sent.logit_bias).toBeUndefined();
    expect(sent.temperature).toBe(0.5);
    const before = mock.requests.length;
    const res = await send('groq', { n: 2 });
    expect(res.status).toBe(400);
    const err = (await res.json()).error;
    expect(err.param).toBe('n');
    expect(err.message).toContain('groq');
    expect(mock.requests.length).toBe(before);
  });

  test('a non-JSON error body still gives the envelope with the upstream status', async () => {
    mock.server.removeAllListeners('request');
    mock.server.on('request', (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    });
    const res = await send('cerebras', {});
    expect(res.status).toBe(502);
    expect((await res.json()).error.message).toBe('The provider cerebras answered 502.');
  });
});
