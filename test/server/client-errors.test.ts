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

describe('malformed requests: every one gets the envelope with its status, and its connection closed', () => {
  const chunked = (body: string) => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${body}`;
  const cases: Array<[string, string, number, string]> = [
    // Host (RFC 9112 3.2): Node's own check answered a bare 400 without a body.
    ['HTTP/1.1 without Host', 'GET /health HTTP/1.1\r\n\r\n', 400, 'invalid_header'],
    ['HTTP/1.1 without Host, with a body', 'POST /v1/chat/completions HTTP/1.1\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}', 400, 'invalid_header'],
    ['two Host headers', 'GET /health HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n', 400, 'invalid_header'],
    // Method tokens.
    ['an unknown method', 'BREW /health HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a method with a character no token has', 'G@T /health HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a lower-case method', 'get /health HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a NUL in the method', 'G\u0000T /health HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    // Header bytes.
    ['a control character in a header name', 'GET /health HTTP/1.1\r\nhost: x\r\nx-bad\u0001name: 1\r\n\r\n', 400, 'invalid_header'],
    ['a NUL in a header value', 'GET /health HTTP/1.1\r\nhost: x\r\nx-bad: a\u0000b\r\n\r\n', 400, 'invalid_header'],
    ['a space before the colon', 'GET /health HTTP/1.1\r\nhost: x\r\nx-sp : 1\r\n\r\n', 400, 'invalid_header'],
    ['a header line without a colon', 'GET /health HTTP/1.1\r\nhost: x\r\nnocolon\r\n\r\n', 400, 'invalid_header'],
    ['an obsolete folded header line', 'GET /health HTTP/1.1\r\nhost: x\r\nx-a: 1\r\n folded\r\n\r\n', 400, 'invalid_header'],
    // Framing of the body.
    ['a chunk size that is not hex', chunked('zz\r\n'), 400, 'invalid_request'],
    ['a chunk size that overflows', chunked('fffffffffffffffffff\r\n'), 400, 'invalid_request'],
    ['chunk data not followed by CRLF', chunked('2\r\n{}XX0\r\n\r\n'), 400, 'invalid_request'],
    ['chunk extensions over 16 KiB', chunked(`2;${'e'.repeat(20_000)}\r\n{}\r\n0\r\n\r\n`), 413, 'payload_too_large'],
    ['a transfer-encoding that does not end in chunked', 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\n', 400, 'invalid_request'],
    ['both content-length and chunked', 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n0\r\n\r\n', 400, 'invalid_request'],
    ['two content-lengths', 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n', 400, 'invalid_request'],
    ['a negative content-length', 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n', 400, 'invalid_request'],
    // Size.
    ['headers over 16 KiB', `GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ['a request line over 16 KiB', `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`, 431, 'headers_too_large'],
    // The request line.
    ['an unknown HTTP version', 'GET /health HTTP/9.9\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a protocol that is not HTTP', 'GET /health HTTX/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a token after the version', 'GET /health HTTP/1.1 extra\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a space in the path', 'GET /he alth HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['a control character in the path', 'GET /\u0001 HTTP/1.1\r\nhost: x\r\n\r\n', 400, 'invalid_request'],
    ['bare LF line ends', 'GET /health HTTP/1.1\nhost: x\n\n', 400, 'invalid_request'],
    ['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400, 'invalid_request'],
    ['bytes that are not HTTP', '\u0000\u0001\u0002 hello\r\n\r\n', 400, 'invalid_request'],
    ['CONNECT', 'CONNECT example.test:443 HTTP/1.1\r\nhost: example.test:443\r\n\r\n', 405, 'method_not_allowed'],
  ];

  test.each(cases.map(([name, bytes, status, code]) => ({ name, bytes, status, code })))('$name: $status $code', async ({ bytes, status, code }) => {
    const r = await raw(Buffer.from(bytes, 'latin1'), { end: true });
    expect(r.closed).toBe(true);
    expect(r.text.startsWith(`HTTP/1.1 ${status} `), JSON.stringify(r.text.slice(0, 120))).toBe(true);
    expect(parse(r.text).headers).toContain('connection: close');
    expectEnvelope(r.text, status, code);
  });

  test.each([
    ['HTTP/1.0 without Host', 'GET /health HTTP/1.0\r\n\r\n'],
    ['an empty Host', 'GET /health HTTP/1.1\r\nhost:\r\n\r\n'],
    // Node answered a bare 417; an expectation the gateway does not know is ignored (RFC 9110 allows it).
    ['an unknown expectation', 'GET /health HTTP/1.1\r\nhost: x\r\nexpect: something-else\r\n\r\n'],
  ])('%s is served', async (_name, bytes) => {
    const r = await raw(bytes, { end: true });
    expect(r.text.startsWith('HTTP/1.1 200 '), JSON.stringify(r.text.slice(0, 120))).toBe(true);
    expect(parse(r.text).body).toEqual({ status: 'ok' });
  });
});
