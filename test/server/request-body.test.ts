import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * Request bodies the gateway refuses or that stop coming. A body over the
 * limit is answered 413 while the client is still sending, and the server
 * keeps reading (and dropping) a bounded amount before it closes, so the
 * client reads the 413 instead of a reset (undici, what fetch and the openai
 * SDK use, reported EPIPE or a connection error and retried). A body that
 * stops arriving is answered 408 after `server.bodyIdleTimeoutMs`, long
 * before Node's requestTimeout (2 min, left at its default here).
 */
const BODY_IDLE_MS = 300;
/** Generous: what the gateway should close must be closed well within this (and far within the 120 s requestTimeout). */
const HANG_BOUND_MS = 15_000;
const SIXTY_MB = 60 * 1024 * 1024;

const GATEWAY_KEY = 'body-key-0001';

let mock: MockUpstream;
// The server as its own process: in the test's process, client and server would share one event loop, which hides
// the race between the client still sending and the server closing.
let gw: GatewayProcess & { url: string };

beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
  const file = join(await mkdtemp(join(tmpdir(), 'gw-body-')), 'gateway.json');
  await writeFile(file, JSON.stringify({ ...DEFAULT_CONFIG, server: { bodyIdleTimeoutMs: BODY_IDLE_MS } }));
  const started = await startProcess(['--config', file], { GATEWAY_API_KEYS: GATEWAY_KEY, GATEWAY_REQUEST_LOG: 'all' });
  gw = Object.assign(started, { url: `http://127.0.0.1:${started.port}` });
}, 30_000);

afterAll(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
  await mock.close();
});

/** The request lines the gateway logged so far. */
const logged = () =>
  gw
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request');

const headers = { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': '' };
const chatBody = (content: string) => JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

/** What a raw connection received, whether it was closed by the server, and any error writing to it. */
interface RawResult {
  text: string;
  closed: boolean;
  error: string | null;
}

/**
 * Opens a raw connection, lets `drive` write to it, collects the answer until the connection closes or the bound
 * passes. `sendsOn`: the client keeps its side open when the server ends its own, as a client that does not read
 * while it sends its body (a plain socket ends its side at once, which a lingering server takes as the end).
 */
function raw(drive: (socket: Socket, received: () => string) => void, options: { sendsOn?: boolean } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect({ port: gw.port, host: '127.0.0.1', allowHalfOpen: options.sendsOn === true });
    let text = '';
    let error: string | null = null;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false, error });
    }, HANG_BOUND_MS);
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, error });
    });
    drive(socket, () => text);
  });
}

function envelopeOf(text: string, status: number, code: string): { message: string } {
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split).toLowerCase();
  expect(head.startsWith(`http/1.1 ${status} `), text.slice(0, 200)).toBe(true);
  expect(head).toContain('content-type: application/json');
  expect(head).toContain('connection: close');
  const length = Number(/content-length: (\d+)/.exec(head)?.[1]);
  const body = JSON.parse(text.slice(split + 4, split + 4 + length));
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(code);
  return body.error;
}

describe('a body over the limit gets its 413, not a broken connection', () => {
  test('fetch (undici) with a 60 MB body and its content-length: 413 in the envelope, connection: close', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'x-gateway-custom-host': mock.baseURL }, body: Buffer.alloc(SIXTY_MB, 97) });
      expect(res.status).toBe(413);
      expect(res.headers.get('connection')).toBe('close');
      expect(await res.json()).toMatchObject({ error: { code: 'payload_too_large', message: expect.stringContaining('52428800') } });
    }
  }, 60_000);

  test('fetch (undici) with a 60 MB chunked body, refused while it is read: 413', async () => {
    for (let i = 0; i < 3; i++) {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let mb = 0; mb < 60; mb++) controller.enqueue(new Uint8Array(1024 * 1024).fill(97));
          controller.close();
        },
      });
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'x-gateway-custom-host': mock.baseURL }, body, duplex: 'half' } as RequestInit);
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ error: { code: 'payload_too_large' } });
    }
  }, 60_000);

  test.each([0, undefined])('the openai SDK (maxRetries %s): an APIError with status 413, sent once, not a connection error', async (maxRetries) => {
    const client = new OpenAI({
      apiKey: 'sk-provider-key-1',
      baseURL: `${gw.url}/v1`,
      ...(maxRetries === undefined ? {} : { maxRetries }),
      defaultHeaders: { 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL },
    });
    const content = 'a'.repeat(SIXTY_MB);
    for (let i = 0; i < 3; i++) {
      const trace = `sdk-413-${maxRetries ?? 'default'}-${i}`;
      const error = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }, { headers: { 'x-gateway-trace-id': trace } }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(APIError);
      expect(error).not.toBeInstanceOf(APIConnectionError);
      expect((error as APIError).status).toBe(413);
      expect((error as APIError).code).toBe('payload_too_large');
      // 413 is not retried: one request reached the gateway, and it was answered.
      await new Promise((r) => setTimeout(r, 200));
      expect(logged().filter((l) => l.trace_id === trace).map((l) => l.status)).toEqual([413]);
    }
  }, 60_000);

  test('a content-length over the limit is answered 413 before any body byte, and the server reads on while the client sends', async () => {
    let wrote = 0;
    const r = await raw((socket, received) => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-type: application/json\r\ncontent-length: ${SIXTY_MB}\r\n\r\n`);
      const waitForAnswer = setInterval(() => {
        if (!received().includes('\r\n\r\n')) return;
        clearInterval(waitForAnswer);
        // The answer is in, before a byte of the body: now 8 MB of it, as a client that does not read while sending would.
        const chunk = Buffer.alloc(64 * 1024, 97);
        const send = () => {
          while (wrote < 8 * 1024 * 1024) {
            wrote += chunk.length;
            if (!socket.write(chunk)) return void socket.once('drain', send);
          }
          socket.end();
        };
        send();
      }, 5);
    }, { sendsOn: true });
    envelopeOf(r.text, 413, 'payload_too_large');
    expect(r.closed).toBe(true);
    // Every byte went out and the connection ended cleanly: no reset while the client was still sending.
    expect(r.error).toBeNull();
    expect(wrote).toBe(8 * 1024 * 1024);
  }, 30_000);

  test('with expect: 100-continue, a body over the limit is not asked for: 413 without a 100 Continue', async () => {
    const r = await raw((socket) => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-type: application/json\r\ncontent-length: ${SIXTY_MB}\r\nexpect: 100-continue\r\n\r\n`);
      setTimeout(() => socket.end(), 500);
    });
    expect(r.text).not.toContain('100 Continue');
    envelopeOf(r.text, 413, 'payload_too_large');
  });

  test('a client that keeps sending after the 413 is cut off within the bound (time or bytes)', async () => {
    let wrote = 0;
    const started = Date.now();
    const r = await raw((socket, received) => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-length: 1000000000\r\n\r\n`);
      // Enough to keep the connection busy (each pause under the body idle timeout), never the whole announced body.
      const chunk = Buffer.alloc(256 * 1024, 97);
      const timer = setInterval(() => {
        if (socket.destroyed || wrote > 900_000_000) return clearInterval(timer);
        if (received() !== '') {
          wrote += chunk.length;
          socket.write(chunk);
        }
      }, 20);
      socket.once('close', () => clearInterval(timer));
    }, { sendsOn: true });
    envelopeOf(r.text, 413, 'payload_too_large');
    expect(r.closed).toBe(true);
    // The server stopped reading well before the client would have stopped: within seconds, far short of the body.
    expect(Date.now() - started).toBeLessThan(HANG_BOUND_MS);
    expect(wrote).toBeLessThan(900_000_000);
  }, 30_000);
});

describe('a body that stops arriving (server.bodyIdleTimeoutMs)', () => {
  const halfSent = (lines: string, body = '') => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n${lines}\r\n${body}`;

  test('200 connections that send headers and content-length: 100, then nothing: each gets a 408 envelope and is closed', async () => {
    const started = Date.now();
    const all = await Promise.all(Array.from({ length: 200 }, (_, i) => raw((socket) => socket.write(halfSent(`x-gateway-api-key: ${GATEWAY_KEY}\r\n`, i % 2 === 0 ? '' : '{"model":')))));
    expect(all.filter((r) => !r.closed)).toEqual([]);
    for (const r of all) expect(envelopeOf(r.text, 408, 'request_timeout').message).toContain(`nothing of it came for ${BODY_IDLE_MS} ms`);
    // Far within Node's requestTimeout (120 s), which used to be what closed them.
    expect(Date.now() - started).toBeLessThan(HANG_BOUND_MS);
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
  }, 30_000);

  test('refused before its body was read (no key: 401), a half-sent body does not keep the connection either', async () => {
    const r = await raw((socket) => socket.write(halfSent('')));
    expect(r.text.startsWith('HTTP/1.1 401')).toBe(true);
    expect(r.closed).toBe(true);
  });

  test('an upload that stops arriving has its connection closed', async () => {
    const boundary = 'b0undary';
    const r = await raw((socket) =>
      socket.write(
        `POST /v1/files HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: 100000\r\n\r\n` +
          `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n{"custom_id":`,
      ),
    );
    expect(r.closed).toBe(true);
  });

  test('a body that keeps coming, each pause shorter than the timeout, is read whole', async () => {
    const body = Buffer.from(chatBody('slow but steady'));
    const res = await new Promise<string>((resolve) => {
      const socket = connect(gw.port, '127.0.0.1');
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.includes('Hello from the mock!')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('close', () => resolve(text));
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-gateway-api-key: ${GATEWAY_KEY}\r\nx-gateway-provider: openai\r\nx-gateway-custom-host: ${mock.baseURL}\r\n` +
          `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      );
      // Ten pieces, 100 ms apart: the whole body takes three times the idle timeout, each pause a third of it.
      const piece = Math.ceil(body.length / 10);
      let at = 0;
      const timer = setInterval(() => {
        socket.write(body.subarray(at, at + piece));
        at += piece;
        if (at >= body.length) clearInterval(timer);
      }, BODY_IDLE_MS / 3);
    });
    expect(res.startsWith('HTTP/1.1 200')).toBe(true);
  });

  test('an answer slower than the timeout, once the body is in, is not cut', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...headers, 'x-gateway-custom-host': mock.baseURL },
      body: JSON.stringify({ model: `slow-${BODY_IDLE_MS * 4}`, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.content).toBe('Hello from the mock!');
  });
});
