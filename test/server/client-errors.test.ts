import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';

/*
 * What never reaches the handler still gets the one envelope: parser
 * rejections, requests that stop arriving (server timeouts) and CONNECT. The
 * timeouts cover receiving a request only, so a stream that lasts longer than
 * them is not cut.
 */
const HEADERS_TIMEOUT = 300;
const REQUEST_TIMEOUT = 600;
/** Generous: a socket the gateway should close must be closed well within this. */
const HANG_BOUND_MS = 5_000;

let gw: Awaited<ReturnType<typeof startTestServer>>;
let slow: Server;
let slowURL: string;

beforeAll(async () => {
  // A loopback upstream whose answer dribbles out over ~1.6 s: longer than both server timeouts.
  slow = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let n = 0;
    const timer = setInterval(() => {
      res.write(`data: {"n":${n}}\n\n`);
      if (++n === 8) {
        clearInterval(timer);
        res.end('data: [DONE]\n\n');
      }
    }, 200);
    req.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  slowURL = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`;
  gw = await startTestServer({
    config: { ...DEFAULT_CONFIG, server: { headersTimeoutMs: HEADERS_TIMEOUT, requestTimeoutMs: REQUEST_TIMEOUT } },
    env: { GATEWAY_ALLOW_PRIVATE_HOSTS: '1' },
  });
});

afterAll(async () => {
  await gw.close();
  slow.closeAllConnections();
  await new Promise<void>((r) => slow.close(() => r()));
});

/** Writes raw bytes to the gateway and collects what comes back until the gateway closes the connection (or the bound passes). */
function raw(bytes: string | Buffer, options: { end?: boolean } = {}): Promise<{ text: string; closed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(gw.port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false, ms: performance.now() - started });
    }, HANG_BOUND_MS);
    socket.on('data', (c) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, ms: performance.now() - started });
    });
    socket.write(bytes);
    if (options.end === true) socket.end();
  });
}

/** Status and envelope of a raw HTTP answer. */
function parse(text: string): { status: number; headers: string; body: any } {
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split);
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(text.slice(split + 4)) };
}

function expectEnvelope(text: string, status: number, code: string) {
  const answer = parse(text);
  expect(answer.status).toBe(status);
  expect(answer.headers).toContain('content-type: application/json');
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(answer.body.error.code).toBe(code);
  return answer.body.error;
}

describe('server timeouts', () => {
  test('a request whose body never comes gets a 408 envelope and its connection is closed', async () => {
    const r = await raw(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n`);
    expect(r.closed).toBe(true);
    const error = expectEnvelope(r.text, 408, 'request_timeout');
    expect(error.message).toContain('requestTimeoutMs');
  });

  test('headers that never end get a 408 envelope and the connection is closed', async () => {
    const r = await raw('GET /health HTTP/1.1\r\nhost: x\r\nx-slow: ');
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 408, 'request_timeout');
  });

  test('many half-sent requests are all closed', async () => {
    const all = await Promise.all(Array.from({ length: 50 }, () => raw('POST /v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"a"')));
    expect(all.every((r) => r.closed)).toBe(true);
  });

  test('a stream that lasts longer than both timeouts is not cut', async () => {
    const res = await fetch(`${gw.url}/v1/slow-stream`, {
      headers: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', authorization: 'Bearer sk-up', 'x-gateway-custom-host': slowURL },
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.match(/data: \{"n":\d\}/g)).toHaveLength(8);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  test('a keep-alive connection idle longer than the timeouts still serves its next request', async () => {
    const r = await new Promise<string>((resolve) => {
      const socket = connect(gw.port, '127.0.0.1');
      let text = '';
      socket.on('data', (c) => {
        text += c.toString();
        if ((text.match(/HTTP\/1\.1 200/g) ?? []).length === 2) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n');
      setTimeout(() => socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n'), REQUEST_TIMEOUT * 2);
      setTimeout(() => resolve(text), HANG_BOUND_MS);
    });
    expect((r.match(/HTTP\/1\.1 200/g) ?? []).length).toBe(2);
  });
});

describe('parser rejections and CONNECT get the envelope', () => {
  test('headers over 16 KiB: 431', async () => {
    const r = await raw(`GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 431, 'headers_too_large');
  });

  test('bad bytes in a header: 400', async () => {
    const r = await raw('GET /health HTTP/1.1\r\nhost: x\r\nx-bad\u0001name: 1\r\n\r\n');
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 400, 'invalid_header');
  });

  test('an unknown method: 400', async () => {
    const r = await raw('BREW /health HTTP/1.1\r\nhost: x\r\n\r\n');
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 400, 'invalid_request');
  });

  test('bytes that are not HTTP: 400', async () => {
    const r = await raw('\u0000\u0001\u0002 hello\r\n\r\n');
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 400, 'invalid_request');
  });

  test('garbage after a complete request on a keep-alive connection still gets the envelope', async () => {
    const text = await new Promise<string>((resolve) => {
      const socket = connect(gw.port, '127.0.0.1');
      let got = '';
      socket.on('data', (c) => {
        const first = got === '';
        got += c.toString('latin1');
        // The first answer is in: now the garbage, on the same connection.
        if (first) socket.write('BREW /health HTTP/1.1\r\nhost: x\r\n\r\n');
      });
      socket.on('close', () => resolve(got));
      setTimeout(() => socket.destroy(), HANG_BOUND_MS);
      socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n');
    });
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    const second = text.indexOf('HTTP/1.1 400');
    expect(second).toBeGreaterThan(0);
    expectEnvelope(text.slice(second), 400, 'invalid_request');
  });

  test('CONNECT: 405 instead of a dropped connection', async () => {
    const r = await raw('CONNECT example.test:443 HTTP/1.1\r\nhost: example.test:443\r\n\r\n');
    expect(r.closed).toBe(true);
    expectEnvelope(r.text, 405, 'method_not_allowed');
  });
});
