import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({ config: { ...DEFAULT_CONFIG, maxBodyBytes: 4096, upstream: { headersTimeoutMs: 300 } } });
});

afterAll(async () => {
  await gw.close();
  await mock.close();
});

const chatBody = (extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': GATEWAY_KEY,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': mock.baseURL,
      authorization: 'Bearer sk-up',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function expectEnvelope(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('x-gateway-trace-id')).toBeTruthy();
  const body = await res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(code);
  return body.error as { message: string; type: string; param: string | null; code: string };
}

describe('400: invalid JSON, invalid fields, unknown provider', () => {
  test('invalid JSON', async () => {
    const err = await expectEnvelope(await post('/v1/chat/completions', '{"model":'), 400, 'invalid_json');
    expect(err.message).toMatch(/not valid JSON/);
    expect(err.type).toBe('invalid_request_error');
  });

  test('a JSON array is not a body', async () => {
    await expectEnvelope(await post('/v1/chat/completions', '[1,2]'), 400, 'invalid_json');
  });

  const chatCases: Array<[string, Record<string, unknown>, string]> = [
    ['no messages', { messages: undefined }, 'messages'],
    ['empty messages', { messages: [] }, 'messages'],
    ['bad role', { messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    ['no model', { model: undefined }, 'model'],
    ['n = 0', { n: 0 }, 'n'],
    ['n = 129', { n: 129 }, 'n'],
    ['n not integer', { n: 1.5 }, 'n'],
    ['5 stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['129 tools', { tools: Array.from({ length: 129 }, () => ({ type: 'function' })) }, 'tools'],
    ['top_logprobs 21', { logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    ['top_logprobs without logprobs', { top_logprobs: 2 }, 'top_logprobs'],
    ['temperature 2.1', { temperature: 2.1 }, 'temperature'],
    ['temperature -0.1', { temperature: -0.1 }, 'temperature'],
    ['top_p 1.5', { top_p: 1.5 }, 'top_p'],
    ['frequency_penalty -2.5', { frequency_penalty: -2.5 }, 'frequency_penalty'],
    ['presence_penalty 2.5', { presence_penalty: 2.5 }, 'presence_penalty'],
    ['stream_options without stream', { stream_options: { include_usage: true } }, 'stream_options'],
    ['0 functions', { functions: [] }, 'functions'],
    ['logit_bias out of range', { logit_bias: { '50256': -101 } }, 'logit_bias.50256'],
  ];
  test.each(chatCases)('chat: %s → 400 naming the field', async (_name, extra, param) => {
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(extra)), 400, 'invalid_request');
    expect(err.param).toBe(param);
    expect(err.message).toContain(`'${param}'`);
  });

  const completionCases: Array<[string, Record<string, unknown>, string]> = [
    ['logprobs 6', { logprobs: 6 }, 'logprobs'],
    ['best_of 21', { best_of: 21 }, 'best_of'],
    ['best_of below n', { best_of: 1, n: 2 }, 'best_of'],
    ['best_of with stream', { best_of: 3, stream: true }, 'best_of'],
    ['n 129', { n: 129 }, 'n'],
    ['5 stop sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['temperature 3', { temperature: 3 }, 'temperature'],
  ];
  test.each(completionCases)('completions: %s → 400 naming the field', async (_name, extra, param) => {
    const err = await expectEnvelope(await post('/v1/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'x', ...extra }), 400, 'invalid_request');
    expect(err.param).toBe(param);
  });

  test('valid edge values and unknown fields pass through untouched', async () => {
    const body = chatBody({ n: 128, temperature: 2, top_p: 0, stop: ['a', 'b', 'c', 'd'], logprobs: true, top_logprobs: 20, frequency_penalty: -2, reasoning_effort: 'low', some_new_field: { x: 1 } });
    const res = await post('/v1/chat/completions', body);
    expect(res.status).toBe(200);
    expect(JSON.parse(mock.requests.at(-1)!.body)).toEqual(body);
  });

  test('unknown provider is named', async () => {
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-provider': 'nopeai' }), 400, 'unknown_provider');
    expect(err.message).toContain('"nopeai"');
    expect(err.param).toBe('x-gateway-provider');
  });

  test('no provider selected on a shaped route', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY },
      body: JSON.stringify(chatBody()),
    });
    await expectEnvelope(res, 400, 'provider_required');
  });

  test('invalid x-gateway-metadata', async () => {
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-metadata': '{nope' }), 400, 'invalid_header');
    expect(err.param).toBe('x-gateway-metadata');
    await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-metadata': '[1]' }), 400, 'invalid_header');
  });

  test('invalid custom host', async () => {
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-custom-host': 'ftp://x' }), 400, 'invalid_header');
    expect(err.param).toBe('x-gateway-custom-host');
  });

  test('a custom host with user info is refused, its password never repeated', async () => {
    const port = await closedPort();
    const res = await post('/v1/chat/completions', chatBody(), { 'x-gateway-custom-host': `http://user:SECRET-pw-1@127.0.0.1:${port}/v1`, 'x-gateway-trace-id': 'trace-userinfo' });
    const err = await expectEnvelope(res, 400, 'invalid_header');
    expect(err.param).toBe('x-gateway-custom-host');
    expect(err.message).toMatch(/user info/);
    expect(JSON.stringify(err)).not.toContain('SECRET');
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-userinfo');
    expect(line.error.code).toBe('invalid_header');
    expect(gw.logs.text()).not.toContain('SECRET');
  });

  // Defect 2 of issue 15: a config's custom_host was never validated (502 ERR_INVALID_URL, or a lookup of the route's first segment).
  const badHosts: Array<[string, string, RegExp]> = [
    ['an unterminated IPv6 literal', 'http://[::1', /custom_host: must be an absolute http or https URL/],
    ['no host', 'http://', /custom_host: must be an absolute http or https URL/],
    ['another scheme', 'ftp://files.example/v1', /custom_host: must be an http or https URL/],
    ['user info', 'http://user:SECRET-pw-2@127.0.0.1:1/v1', /custom_host: must not contain user info/],
  ];
  test.each(badHosts)('config custom_host with %s → 400 naming the field', async (_name, host, rule) => {
    const configs = [
      { provider: 'openai', api_key: 'k', custom_host: host },
      { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', api_key: 'k' }, { strategy: { mode: 'single' }, targets: [{ provider: 'openai', api_key: 'k', custom_host: host }] }] },
    ];
    for (const [i, config] of configs.entries()) {
      const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-config': JSON.stringify(config) }), 400, 'invalid_request');
      expect(err.param).toBe('x-gateway-config');
      expect(err.message).toMatch(rule);
      if (i === 1) expect(err.message).toContain('targets[1].targets[0].custom_host: ');
      expect(err.message).not.toContain('SECRET');
    }
  });
});

describe('401: auth', () => {
  test('missing key', async () => {
    const res = await post('/v1/chat/completions', chatBody(), { 'x-gateway-api-key': '' });
    const err = await expectEnvelope(res, 401, 'unauthorized');
    expect(err.type).toBe('authentication_error');
  });

  test('unknown key, and the attempted key is not echoed', async () => {
    const res = await post('/v1/chat/completions', chatBody(), { 'x-gateway-api-key': 'wrong-key-999999' });
    const err = await expectEnvelope(res, 401, 'unauthorized');
    expect(err.message).not.toContain('wrong-key-999999');
  });

  test('the proxy requires a key too; /health does not', async () => {
    const res = await fetch(`${gw.url}/v1/models`, { headers: { 'x-gateway-provider': 'openai' } });
    await expectEnvelope(res, 401, 'unauthorized');
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
  });

  test('an unauthenticated request never reaches the upstream', async () => {
    const before = mock.requests.length;
    await post('/v1/chat/completions', chatBody(), { 'x-gateway-api-key': 'wrong-key-999999' });
    expect(mock.requests.length).toBe(before);
  });
});

describe('404 and 405', () => {
  test('unknown route with no provider to proxy to', async () => {
    const res = await fetch(`${gw.url}/v1/unknown/thing`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } });
    const err = await expectEnvelope(res, 404, 'not_found');
    expect(err.message).toContain('/v1/unknown/thing');
  });

  test('unknown route outside the API', async () => {
    await expectEnvelope(await fetch(`${gw.url}/nothing-here`), 404, 'not_found');
  });

  test('a method the proxy does not take', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'PATCH', headers: { 'x-gateway-api-key': GATEWAY_KEY } });
    await expectEnvelope(res, 405, 'method_not_allowed');
  });
});

describe('413: body over the limit', () => {
  test('declared by content-length', async () => {
    const big = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const err = await expectEnvelope(await post('/v1/chat/completions', big), 413, 'payload_too_large');
    expect(err.message).toContain('4096');
  });

  test('sent chunked, without content-length', async () => {
    const payload = JSON.stringify(chatBody({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] }));
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(payload));
        controller.close();
      },
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await expectEnvelope(res, 413, 'payload_too_large');
  });
});

describe('502 and 504: upstream failures', () => {
  test('unreachable upstream → 502, naming the origin only', async () => {
    const port = await closedPort();
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody(), { 'x-gateway-custom-host': `http://127.0.0.1:${port}/v1?key=secret` }), 502, 'upstream_unreachable');
    expect(err.message).toContain(`127.0.0.1:${port}`);
    expect(err.message).not.toContain('secret');
  });

  test('garbled upstream → 502', async () => {
    await expectEnvelope(await post('/v1/chat/completions', chatBody({ model: 'garbled' })), 502, 'upstream_invalid_response');
  });

  test('upstream resets before answering → 502', async () => {
    await expectEnvelope(await post('/v1/chat/completions', chatBody({ model: 'reset' })), 502, 'upstream_unreachable');
  });

  test('slow upstream → 504 after the headers timeout', async () => {
    const err = await expectEnvelope(await post('/v1/chat/completions', chatBody({ model: 'slow-2000' })), 504, 'upstream_timeout');
    expect(err.type).toBe('timeout_error');
  });

  test('reset mid-stream: the SSE client gets an error event and the stream ends', async () => {
    const res = await post('/v1/chat/completions', chatBody({ model: 'reset', stream: true }), { 'x-gateway-trace-id': 'trace-reset' });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"content":"Hello"');
    const events = text.trim().split('\n\n');
    const last = JSON.parse(events.at(-1)!.slice('data: '.length));
    expect(last.error.code).toBe('upstream_unreachable');
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-reset');
    expect(line.aborted).toBe(true);
    expect(line.error.code).toBe('upstream_unreachable');
  });
});

describe('upstream errors pass through', () => {
  test.each([400, 401, 404, 500, 503])('upstream %i keeps its status and body', async (status) => {
    const res = await post('/v1/chat/completions', chatBody({ model: `error-${status}` }));
    expect(res.status).toBe(status);
    const body = await res.json();
    expect(body.error.message).toBe(`Mock error ${status}`);
  });
});

describe('tracing', () => {
  test('a trace id is generated and echoed on errors too; span headers and metadata reach the log', async () => {
    const res = await post('/v1/chat/completions', chatBody(), {
      'x-gateway-span-id': 'span-1',
      'x-gateway-parent-span-id': 'span-0',
      'x-gateway-span-name': 'answer',
      'x-gateway-metadata': '{"user":"u-42","env":"test"}',
    });
    expect(res.status).toBe(200);
    const traceId = res.headers.get('x-gateway-trace-id')!;
    expect(traceId).toMatch(/^[0-9a-f-]{36}$/);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === traceId);
    expect(line).toMatchObject({ span_id: 'span-1', parent_span_id: 'span-0', span_name: 'answer', metadata: { user: 'u-42', env: 'test' } });

    const denied = await post('/v1/chat/completions', chatBody(), { 'x-gateway-api-key': 'nope-nope-nope', 'x-gateway-trace-id': 'given-trace' });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-gateway-trace-id')).toBe('given-trace');
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}
