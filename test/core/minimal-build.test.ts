import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createGateway, type Gateway } from '../../core/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { memoryLogger } from '../helpers/gateway.js';
import { LOOPBACK_HOSTS } from '../helpers/outbound.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

let mock: MockUpstream;
let gateway: Gateway;
let server: Server;
let url: string;

beforeAll(async () => {
  mock = await startMockOpenAI();
  // The whole minimal build: one provider plugin, pointed at the mock (on loopback, so allowed by name).
  gateway = createGateway({ plugins: [openai({ baseURL: mock.baseURL })], options: { outbound: { allowHosts: LOOPBACK_HOSTS } }, logger: memoryLogger().logger });
  server = createServer(gateway.handler).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.close();
  await gateway.close(1000);
  await mock.close();
});

test('createGateway({ plugins: [openai()] }) serves a chat completion', async () => {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-minimal' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(body.object).toBe('chat.completion');
  expect(body.choices[0].message.content).toBe('Hello from the mock!');
  // The client's provider key reaches the upstream.
  expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-minimal');
});

test('a routing header no loaded plugin reads is a 400 naming it and the plugin; nothing is sent', async () => {
  const other = await startMockOpenAI();
  try {
    const before = mock.requests.length;
    for (const [name, value, plugin] of [
      ['x-gateway-custom-host', other.baseURL, 'provider-headers'],
      ['x-gateway-config', JSON.stringify({ provider: 'openai', api_key: 'sk-x' }), 'config'],
      ['x-gateway-provider', 'anthropic', 'provider-headers'],
      ['x-gateway-virtual-key', 'prod', 'provider-headers'],
      ['x-gateway-proxy', 'true', 'proxy'],
    ] as const) {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-minimal', [name]: value },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status, name).toBe(400);
      const body = (await res.json()) as { error: Record<string, string> };
      expect(body.error).toMatchObject({ code: 'invalid_header', type: 'invalid_request_error', param: name });
      expect(body.error.message).toContain(plugin);
    }
    expect(mock.requests.length).toBe(before);
    expect(other.requests).toHaveLength(0);
    // x-gateway-provider naming the one provider is what the build does anyway: taken.
    const same = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-minimal', 'x-gateway-provider': 'openai' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(same.status).toBe(200);
  } finally {
    await other.close();
  }
});
