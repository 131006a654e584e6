import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer();
  client = new OpenAI({
    apiKey: 'sk-provider-secret-123',
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL },
  });
});

afterAll(async () => {
  await gw.close();
  await mock.close();
});

describe('the official openai SDK through the real server', () => {
  test('non-stream chat: answer, upstream headers, trace id and one log line with tokens', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-gateway-trace-id': 'trace-e2e-1' } })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('Hello from the mock!');
    expect(data.usage?.total_tokens).toBe(11);
    expect(response.headers.get('x-gateway-trace-id')).toBe('trace-e2e-1');
    expect(response.headers.get('x-request-id')).toBe('req_mock');

    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe('Bearer sk-provider-secret-123');
    // The gateway key never travels upstream, nor do the gateway's own headers.
    expect(seen.headers['x-gateway-api-key']).toBeUndefined();
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-gateway-'))).toEqual([]);
    // Unchanged body bytes go upstream.
    expect(JSON.parse(seen.body)).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-e2e-1');
    expect(line).toMatchObject({
      route: 'chat.completions',
      provider: 'openai',
      model: 'gpt-4o-mini',
      status: 200,
      stream: false,
      tokens: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3, reasoning_tokens: 1 },
    });
    expect(line.target_path).toBe('0');
    expect(line.attempts).toEqual([{ target: '0', provider: 'openai', status: 200, startMs: expect.any(Number), latencyMs: expect.any(Number), error: null }]);
    expect(line.latency_ms).toBeGreaterThan(0);
    expect(line.upstream_latency_ms).toBeGreaterThan(0);
    expect(line.upstream_latency_ms).toBeLessThanOrEqual(line.latency_ms);
  });

  test('stream chat: chunks in order, usage chunk, [DONE], usage in the log', async () => {
    const stream = await client.chat.completions.create(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } },
      { headers: { 'x-gateway-trace-id': 'trace-e2e-stream' } },
    );
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello!');
    expect(chunks).toBe(5);
    expect(usage?.total_tokens).toBe(11);
    const line = await waitForLog(gw.logs, (l) => l.trace_id === 'trace-e2e-stream');
    expect(line).toMatchObject({ status: 200, stream: true, tokens: { total_tokens: 11 } });
    expect(line.first_byte_ms).toBeGreaterThan(0);
  });

  test('the raw stream ends with data: [DONE]', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-x' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(text.match(/^data: /gm)).toHaveLength(5);
  });

  test('embeddings, with the SDK default base64 encoding decoded by the SDK', async () => {
    const result = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    expect(result.data).toHaveLength(2);
    expect(result.data[0]!.embedding[0]).toBeCloseTo(0.0023064255, 6);
    expect(JSON.parse(mock.requests.at(-1)!.body).encoding_format).toBe('base64');
  });

  test('legacy completions, non-stream and stream', async () => {
    const done = await client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say this is a test' });
    expect(done.choices[0]!.text).toContain('This is a test');
    const stream = await client.completions.create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Hi', stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe('Hi!');
  });

  test('an upstream error surfaces as an APIError with the upstream status, body and retry headers', async () => {
    const err = await client.chat.completions.create({ model: 'error-429', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    const apiErr = err as APIError;
    expect(apiErr.status).toBe(429);
    expect(apiErr.code).toBe('rate_limit_exceeded');
    expect(apiErr.message).toContain('Mock error 429');
    expect(apiErr.headers?.get('retry-after')).toBe('1');
    expect(apiErr.headers?.get('retry-after-ms')).toBe('1000');

    const err500 = (await client.chat.completions.create({ model: 'error-500', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as APIError;
    expect(err500).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err500.status).toBe(500);
  });

  test('organization and project from the SDK reach the upstream as OpenAI headers', async () => {
    const scoped = client.withOptions({ organization: 'org-abc', project: 'proj_xyz' });
    await scoped.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const seen = mock.requests.at(-1)!;
    expect(seen.headers['openai-organization']).toBe('org-abc');
    expect(seen.headers['openai-project']).toBe('proj_xyz');
  });

  test('upstream connections are pooled and kept alive', async () => {
    const before = mock.connections();
    for (let i = 0; i < 10; i++) await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    // Ten sequential requests reuse one pooled connection (at most one new one if the pool was empty).
    expect(mock.connections() - before).toBeLessThanOrEqual(1);
  });

  test('x-gateway-openai-organization and -project headers scope the upstream call', async () => {
    await client.chat.completions.create(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-gateway-openai-organization': 'org-hdr', 'x-gateway-openai-project': 'proj-hdr' } },
    );
    const seen = mock.requests.at(-1)!;
    expect(seen.headers['openai-organization']).toBe('org-hdr');
    expect(seen.headers['openai-project']).toBe('proj-hdr');
  });

  test('no credential appears in any log line', async () => {
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    await waitForLog(gw.logs, () => true);
    const text = gw.logs.text();
    expect(text).not.toContain('sk-provider-secret-123');
    expect(text).not.toContain(GATEWAY_KEY);
  });
});
