import { afterAll, beforeAll, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await startTestServer({ env: { GATEWAY_ALLOW_PRIVATE_HOSTS: '1' } });
});

afterAll(async () => {
  await gw.close();
  await mock.close();
});

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

// Forwarding the client's content-length next to override_params (which rewrites the body) gave a 502 UND_ERR_REQ_CONTENT_LENGTH_MISMATCH.
test('a config forwarding content-length is a 400 naming the entry, not a 502', async () => {
  const config = { provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL, override_params: { temperature: 0 }, forward_headers: ['x-tenant', 'content-length'] };
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config), 'x-tenant': 't' },
    body: JSON.stringify(chat),
  });
  expect(res.status).toBe(400);
  const { error } = await res.json();
  expect(error).toMatchObject({ code: 'invalid_request', param: 'x-gateway-config' });
  expect(error.message).toContain('forward_headers[1]');
  expect(error.message).toContain('content-length');
});

test('an ordinary header is still forwarded with override_params', async () => {
  const config = { provider: 'openai', api_key: 'sk-up', custom_host: mock.baseURL, override_params: { temperature: 0 }, forward_headers: ['x-tenant'] };
  const before = mock.requests.length;
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config), 'x-tenant': 't' },
    body: JSON.stringify(chat),
  });
  expect(res.status).toBe(200);
  await res.text();
  expect(mock.requests[before]!.headers['x-tenant']).toBe('t');
});
