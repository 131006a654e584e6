import { afterAll, beforeAll, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

// The bundled default config wires caching, guardrails and routing together; this proves the wiring end to end.
let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;
beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw.close();
  await mock.close();
});

const send = (config: Record<string, unknown>, trace: string) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': GATEWAY_KEY,
      'x-gateway-trace-id': trace,
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-d', custom_host: mock.baseURL, ...config }),
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cache me' }] }),
  });

test('simple cache: a miss, then a hit served without the upstream, each in its log line', async () => {
  const first = await send({ cache: { mode: 'simple', max_age: 60 } }, 'cache-1');
  expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
  const body = await first.json();
  await waitForLog(gw.logs, (l) => l.trace_id === 'cache-1');
  const before = mock.requests.length;
  const second = await send({ cache: { mode: 'simple', max_age: 60 } }, 'cache-2');
  expect(second.headers.get('x-gateway-cache-status')).toBe('HIT');
  expect((await second.json()).choices).toEqual(body.choices);
  expect(mock.requests.length).toBe(before);
  expect(await waitForLog(gw.logs, (l) => l.trace_id === 'cache-2')).toMatchObject({ cache_status: 'HIT' });
});

test('no cache in the config: DISABLED', async () => {
  const res = await send({}, 'cache-3');
  expect(res.headers.get('x-gateway-cache-status')).toBe('DISABLED');
});

test('an input guardrail denies before the cache could answer', async () => {
  await send({ cache: { mode: 'simple' } }, 'cache-4');
  const denied = await send({ cache: { mode: 'simple' }, input_guardrails: [{ id: 'g', deny: true, 'default.contains': { words: ['cache'], operator: 'none' } }] }, 'cache-5');
  expect(denied.status).toBe(446);
});
