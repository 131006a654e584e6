import { afterAll, beforeAll, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer, waitForLog } from '../../helpers/gateway.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';

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

const headers = () => ({
  'x-gateway-api-key': GATEWAY_KEY,
  'x-gateway-provider': 'openai',
  'x-gateway-custom-host': mock.baseURL,
  authorization: 'Bearer sk-proxy-key',
  'x-client-header': 'kept',
});

test.each(['GET', 'POST', 'PUT', 'DELETE'])('%s is forwarded with path, query and body as received', async (method) => {
  const body = method === 'GET' ? undefined : '{"raw": "bytes",   "kept":true}';
  const res = await fetch(`${gw.url}/v1/assistants/asst-1?limit=2&after=x%20y`, {
    method,
    headers: { ...headers(), ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('x-echo')).toBe('yes');
  expect(res.headers.get('x-gateway-trace-id')).toBeTruthy();
  const echo = await res.json();
  expect(echo.method).toBe(method);
  expect(echo.path).toBe('/v1/assistants/asst-1');
  expect(echo.query).toBe('limit=2&after=x%20y');
  expect(echo.body).toBe(body ?? '');
  expect(echo.headers.authorization).toBe('Bearer sk-proxy-key');
  expect(echo.headers['x-client-header']).toBe('kept');
  expect(echo.headers['x-gateway-api-key']).toBeUndefined();
  expect(Object.keys(echo.headers).some((h: string) => h.startsWith('x-gateway-'))).toBe(false);
});

test('the upstream status, headers and bytes come back unchanged', async () => {
  const res = await fetch(`${gw.url}/v1/brew/teapot`, { headers: headers() });
  expect(res.status).toBe(418);
  expect(res.headers.get('x-echo')).toBe('yes');
  const text = await res.text();
  expect(JSON.parse(text).path).toBe('/v1/brew/teapot');
  expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
});

test('every proxied request is logged', async () => {
  const res = await fetch(`${gw.url}/v1/models`, { headers: { ...headers(), 'x-gateway-trace-id': 'proxy-trace' } });
  expect(res.status).toBe(200);
  const line = await waitForLog(gw.logs, (l) => l.trace_id === 'proxy-trace');
  expect(line).toMatchObject({ route: 'proxy', path: '/v1/models', method: 'GET', provider: 'openai', status: 200 });
});

test('a shaped-route path with another method goes through the proxy', async () => {
  const res = await fetch(`${gw.url}/v1/chat/completions/chatcmpl-1`, { headers: headers() });
  expect(res.status).toBe(200);
  expect((await res.json()).path).toBe('/v1/chat/completions/chatcmpl-1');
});
