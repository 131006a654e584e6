import { afterAll, beforeAll, describe, expect, test } from 'vitest';
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

describe('x-gateway-proxy: true reaches a provider path the gateway serves itself', () => {
  test('GET /v1/logs goes to the provider with the header, and answers the gateway\'s own log list without it', async () => {
    const before = mock.requests.length;
    const proxied = await fetch(`${gw.url}/v1/logs?limit=1`, { headers: { ...headers(), 'x-gateway-proxy': 'true' } });
    expect(proxied.status).toBe(200);
    expect(proxied.headers.get('x-echo')).toBe('yes');
    const echo = await proxied.json();
    expect(echo).toMatchObject({ method: 'GET', path: '/v1/logs', query: 'limit=1' });
    expect(echo.headers.authorization).toBe('Bearer sk-proxy-key');
    expect(Object.keys(echo.headers).some((h: string) => h.startsWith('x-gateway-'))).toBe(false);
    expect(mock.requests.length).toBe(before + 1);

    const own = await fetch(`${gw.url}/v1/logs?limit=1`, { headers: headers() });
    expect(own.status).toBe(200);
    expect(own.headers.get('x-echo')).toBeNull();
    expect((await own.json()).object).toBe('list');
    expect(mock.requests.length).toBe(before + 1);
  });

  test('any method and any of the gateway\'s paths: an admin path, a param route, a shaped route (its body verbatim, unchecked)', async () => {
    const send = (method: string, path: string, body?: string) =>
      fetch(`${gw.url}${path}`, { method, headers: { ...headers(), 'x-gateway-proxy': 'TRUE', ...(body ? { 'content-type': 'application/json' } : {}) }, body });
    const put = await send('PUT', '/v1/configs/pc-1', '{"a": 1}');
    expect(await put.json()).toMatchObject({ method: 'PUT', path: '/v1/configs/pc-1', body: '{"a": 1}' });
    const del = await send('DELETE', '/v1/workspaces/ws-1');
    expect(await del.json()).toMatchObject({ method: 'DELETE', path: '/v1/workspaces/ws-1' });
    const raw = '{"model":"m","messages":[],"tools":[{"type":"web_search"}]}';
    const before = mock.requests.length;
    const chat = await send('POST', '/v1/chat/completions', raw);
    expect(chat.status).toBe(200);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', body: raw });
    expect(mock.requests.length).toBe(before + 1);
  });

  test('another value leaves routing as it is', async () => {
    const res = await fetch(`${gw.url}/v1/logs?limit=1`, { headers: { ...headers(), 'x-gateway-proxy': 'yes' } });
    expect(res.headers.get('x-echo')).toBeNull();
    expect((await res.json()).object).toBe('list');
  });

  test('authentication still applies: no key is a 401, a key without completions.write a 403', async () => {
    const { 'x-gateway-api-key': _key, ...anonymous } = headers();
    const before = mock.requests.length;
    const none = await fetch(`${gw.url}/v1/logs`, { headers: { ...anonymous, 'x-gateway-proxy': 'true' } });
    expect(none.status).toBe(401);
    expect((await none.json()).error.code).toBe('unauthorized');

    const created = await fetch(`${gw.url}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY },
      body: JSON.stringify({ type: 'workspace-service', name: 'logs reader', scopes: ['logs.read'] }),
    });
    expect(created.status).toBe(200);
    const reader = (await created.json()).key as string;
    const forbidden = await fetch(`${gw.url}/v1/logs`, { headers: { ...headers(), 'x-gateway-api-key': reader, 'x-gateway-proxy': 'true' } });
    expect(forbidden.status).toBe(403);
    expect((await forbidden.json()).error.message).toContain('completions.write');
    expect(mock.requests.length).toBe(before);
    // The same key reads the gateway's own logs.
    expect((await fetch(`${gw.url}/v1/logs`, { headers: { ...headers(), 'x-gateway-api-key': reader } })).status).toBe(200);
  });
});
