import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';

/*
 * An upstream that sends its response headers and then stalls. While nothing
 * has reached the client yet, that is a 504 in the envelope (a 502 when the
 * upstream breaks off instead), never a connection reset without a status.
 */
const BODY_TIMEOUT = 300;

let stall: Server;
let base: string;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  // Paths pick the behaviour: /stall/... sends JSON headers and a first fragment, then nothing; /reset/... the same, then a reset; /sse-stall/... SSE headers and one event, then nothing.
  stall = createServer((req, res) => {
    req.resume();
    const url = req.url ?? '';
    if (url.includes('/sse-stall')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[]}\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
    if (url.includes('/reset')) {
      res.flushHeaders();
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    res.flushHeaders();
  });
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(stall.address() as AddressInfo).port}`;
  gw = await startTestServer({ config: { ...DEFAULT_CONFIG, upstream: { bodyTimeoutMs: BODY_TIMEOUT } }, env: { GATEWAY_ALLOW_PRIVATE_HOSTS: '1' } });
});

afterAll(async () => {
  await gw.close();
  stall.closeAllConnections();
  await new Promise<void>((r) => stall.close(() => r()));
});

function call(provider: string, prefix: string, path = '/v1/chat/completions', body: unknown = { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }) {
  return fetch(`${gw.url}${path}`, {
    method: body === null ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': provider, authorization: 'Bearer sk-up', 'x-api-key': 'sk-up', 'x-gateway-custom-host': `${base}${prefix}` },
    body: body === null ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

async function expectEnvelope(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('x-gateway-trace-id')).toBeTruthy();
  const body = await res.json();
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(code);
  return body.error;
}

describe('an upstream that stalls after its headers', () => {
  test('passed through (openai, non-stream): 504', async () => {
    const error = await expectEnvelope(await call('openai', '/stall/v1'), 504, 'upstream_timeout');
    expect(error.message).toContain('stopped sending');
  });

  test('read whole and translated (anthropic): 504', async () => {
    await expectEnvelope(await call('anthropic', '/stall/v1'), 504, 'upstream_timeout');
  });

  test('through the generic proxy: 504', async () => {
    await expectEnvelope(await call('openai', '/stall/v1', '/v1/assistants', null), 504, 'upstream_timeout');
  });

  test('breaking off after its headers: 502', async () => {
    await expectEnvelope(await call('openai', '/reset/v1'), 502, 'upstream_unreachable');
    await expectEnvelope(await call('anthropic', '/reset/v1'), 502, 'upstream_unreachable');
  });

  test('an SSE stream that stalls after its first event ends with an error event', async () => {
    const res = await call('openai', '/sse-stall/v1', '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('data: {"choices":[]}');
    expect(text).toContain('"code":"upstream_timeout"');
  });
});
