import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { GatewayError, mapChunks, readResponseBody, UpstreamBody, UpstreamClient, type Flow } from '../../../core/index.js';

/*
 * The upstream body contract (plugin API 2.0): an answer's chunks pushed from undici's handler to one consumer,
 * read whole, chunk by chunk, or let go; backpressure and cancellation reaching the upstream's socket.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let server: Server;
let base: string;
let client: UpstreamClient;
let sockets = 0;

beforeAll(async () => {
  server = createServer((req, res) => handler(req, res));
  server.on('connection', () => sockets++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = new UpstreamClient({ connections: 4, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, outbound: { allowPrivateHosts: true } });
});

afterAll(async () => {
  await client.close();
  await new Promise((r) => server.close(r));
});

afterEach(() => {
  handler = (_req, res) => res.end();
});

const get = (path = '/') => client.send({ method: 'GET', url: base + path, headers: {}, body: null }, null);
const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe('read whole', () => {
  test('bytes(), text() and json() give the body as sent, across many chunks', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    handler = (_req, res) => {
      res.writeHead(200);
      for (let at = 0; at < big.length; at += 65_536) res.write(big.subarray(at, at + 65_536));
      res.end();
    };
    const bytes = await (await get()).body.bytes();
    expect(bytes.equals(big)).toBe(true);

    handler = (_req, res) => res.end('{"a":"é"}');
    expect(await (await get()).body.text()).toBe('{"a":"é"}');
    expect(await (await get()).body.json()).toEqual({ a: 'é' });
  });

  test('a body that is not JSON, or over the limit, is a 502 that quotes nothing of it', async () => {
    handler = (_req, res) => res.writeHead(500).end('<html>secret-token-123</html>');
    const err = await (await get()).body.json().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('upstream_invalid_response');
    expect((err as GatewayError).message).toBe('The upstream answered 500 with a body that is not JSON.');

    handler = (_req, res) => res.end(Buffer.alloc(2000));
    const over = await (await get()).body.bytes(1000).catch((e: unknown) => e);
    expect((over as GatewayError).code).toBe('upstream_invalid_response');
    expect((over as GatewayError).message).toContain('larger than 1000 bytes');
  });

  test('a body read twice is refused (a body is read once)', async () => {
    handler = (_req, res) => res.end('x');
    const body = (await get()).body;
    await body.bytes();
    expect(() => body.start({ data: () => true, end: () => undefined })).toThrow('read once');
  });

  test('a connection that breaks off mid-body is a 502 for the reader', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      setTimeout(() => res.socket?.destroy(), 10);
    };
    const err = await (await get()).body.bytes().catch((e: unknown) => e);
    expect((err as GatewayError).code).toBe('upstream_unreachable');
  });
});

describe('chunk by chunk', () => {
  test('each chunk reaches the sink as the upstream sends it, before the upstream has sent the next', async () => {
    let next: (() => void) | null = null;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      next = () => {
        res.write('data: 2\n\n');
        next = () => res.end('data: [DONE]\n\n');
      };
    };
    const body = (await get()).body;
    const seen: string[] = [];
    const ended = new Promise<Error | null>((resolve) => body.start({ data: (c) => void seen.push(c.toString()), end: resolve }));
    await waitFor(() => seen.length === 1);
    expect(seen).toEqual(['data: 1\n\n']);
    next!();
    await waitFor(() => seen.length === 2);
    expect(seen[1]).toBe('data: 2\n\n');
    next!();
    expect(await ended).toBeNull();
    expect(seen.join('')).toBe('data: 1\n\ndata: 2\n\ndata: [DONE]\n\n');
  });

  test('backpressure: a sink that answers false stops the upstream socket being read until resume()', async () => {
    const total = 48 * 1024 * 1024;
    let written = 0;
    let blocked = false;
    handler = (_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            blocked = true;
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    };
    const body = (await get()).body;
    let received = 0;
    let flow: Flow | null = null;
    const ended = new Promise<Error | null>((resolve) => {
      flow = body.start({
        data: (c) => {
          received += c.length;
          return false; // paused after every chunk
        },
        end: resolve,
      });
    });
    await tick(300);
    // Paused: the upstream could write no more than what the sockets' buffers hold.
    expect(blocked).toBe(true);
    expect(written).toBeLessThan(total);
    const before = received;
    await tick(100);
    expect(received).toBe(before);
    // Resumed for good: everything arrives.
    const sink = { on: true };
    const drain = async () => {
      while (sink.on) {
        flow!.resume();
        await new Promise((r) => setImmediate(r));
      }
    };
    const draining = drain();
    expect(await ended).toBeNull();
    sink.on = false;
    await draining;
    expect(received).toBe(total);
  });

  test('abort() mid-stream aborts the upstream request (its connection closes) and ends the sink once', async () => {
    let closed: Promise<void> = Promise.resolve();
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      closed = new Promise((r) => res.on('close', () => r()));
      void req;
    };
    const body = (await get()).body;
    const ends: Array<Error | null> = [];
    let flow: Flow | null = null;
    flow = body.start({
      data: () => {
        setImmediate(() => flow!.abort(new Error('client left')));
        return true;
      },
      end: (e) => ends.push(e),
    });
    await closed;
    await tick();
    expect(ends).toHaveLength(1);
    expect(ends[0]?.message).toBe('client left');
  });

  test('discard() drains the body so its connection serves the next call', async () => {
    handler = (_req, res) => res.end(Buffer.alloc(1_000_000));
    // One connection: the second call can only go out on the first's, once its body was drained.
    const single = new UpstreamClient({ connections: 1, headersTimeoutMs: 2000, bodyTimeoutMs: 2000, outbound: { allowPrivateHosts: true } });
    const send = () => single.send({ method: 'GET', url: base, headers: {}, body: null }, null);
    const before = sockets;
    (await send()).body.discard();
    expect((await (await send()).body.bytes()).length).toBe(1_000_000);
    expect(sockets - before).toBe(1);
    await single.close();
  });
});

describe('mapChunks', () => {
  test('maps each chunk as it arrives, adds an opening and a tail, and keeps backpressure', async () => {
    const body = UpstreamBody.from(['a', 'b', 'c']);
    const mapped = mapChunks(body, { start: () => '[', push: (c) => c.toString().toUpperCase(), end: () => ']' });
    expect((await readResponseBody(mapped)).toString()).toBe('[ABC]');
  });

  test('a failure is told by fail() and the body ends cleanly, or passed on when fail gives null', async () => {
    const broken = () =>
      UpstreamBody.from(
        (async function* () {
          yield 'a';
          throw new Error('reset');
        })(),
      );
    const told = mapChunks(broken(), { push: (c) => c, end: () => '', fail: (e) => `<${e.message}>` });
    expect((await readResponseBody(told)).toString()).toBe('a<reset>');
    const passed = mapChunks(broken(), { push: (c) => c, end: () => '', fail: () => null });
    await expect(readResponseBody(passed)).rejects.toThrow('reset');
  });

  test('a push that throws fails the body with that error', async () => {
    const mapped = mapChunks(UpstreamBody.from(['a', 'b']), {
      push: () => {
        throw new Error('bad chunk');
      },
      end: () => '',
    });
    await expect(readResponseBody(mapped)).rejects.toThrow('bad chunk');
  });
});

describe('a plugin written for plugin API 1.x', () => {
  test('each Readable call it makes throws a TypeError naming what to call instead', async () => {
    handler = (_req, res) => res.end('x');
    const body = (await get()).body as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const call of [() => body.pipe!({}), () => body.on!('data', () => undefined), () => body.resume!(), () => body.destroy!(), () => (body as any)[Symbol.asyncIterator]()]) {
      expect(call).toThrow(TypeError);
      expect(call).toThrow(/body\.bytes\(\)`, `body\.text\(\)` or `body\.json\(\)`.*body\.start.*body\.discard\(\).*docs\/plugins\.md/);
    }
    (body as unknown as UpstreamBody).discard();
  });
});

async function waitFor(ok: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error('timed out');
    await tick(5);
  }
}
