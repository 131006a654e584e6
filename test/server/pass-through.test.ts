import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';

/*
 * The upstream body contract through the real server: an answer's bytes go from the upstream's socket to the
 * client's as they came, with backpressure both ways, and a client that leaves stops the upstream request.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let upstream: Server;
let upstreamUrl: string;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    // The request body is read before answering, as a real API does.
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startTestServer();
});

afterAll(async () => {
  await gw.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

const headers = () => ({ 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${upstreamUrl}/v1`, authorization: 'Bearer sk-test', 'content-type': 'application/json' });

/** A raw request to the gateway: the response as node gives it, unread. */
function send(method: string, path: string, body: string | null): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(gw.url + path, { method, headers: headers() }, resolve);
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('pass-through', () => {
  test('a proxied answer arrives byte for byte, across many chunks, with its status and headers', async () => {
    const bytes = randomBytes(5 * 1024 * 1024 + 3);
    handler = (_req, res) => {
      res.writeHead(203, { 'content-type': 'application/octet-stream', 'x-upstream-id': 'u-1' });
      for (let at = 0; at < bytes.length; at += 100_003) res.write(bytes.subarray(at, at + 100_003));
      res.end();
    };
    const res = await send('GET', '/v1/some/file/content', null);
    expect(res.statusCode).toBe(203);
    expect(res.headers['x-upstream-id']).toBe('u-1');
    const got = await readAll(res);
    expect(got.length).toBe(bytes.length);
    expect(sha(got)).toBe(sha(bytes));
  });

  test('a chat stream the client asked usage for passes through unchanged, odd spacing and split characters included', async () => {
    const events = [
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Gr"},"finish_reason":null}]}\n\n',
      'data:{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"üß ☃"},"finish_reason":null}]}\n\n',
      ': a comment\n\n',
      'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n',
      'data: [DONE]\n\n',
    ];
    const whole = Buffer.from(events.join(''));
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Cut mid-character: the bytes of "ü" arrive in two chunks.
      const cut = whole.indexOf(Buffer.from('üß')) + 1;
      res.write(whole.subarray(0, cut));
      setTimeout(() => res.end(whole.subarray(cut)), 10);
    };
    const res = await send('POST', '/v1/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }));
    expect(res.statusCode).toBe(200);
    expect((await readAll(res)).equals(whole)).toBe(true);
  });
});

describe('backpressure and cancellation', () => {
  test('a client that stops reading stops the upstream being read; when it reads again, everything arrives', async () => {
    const total = 64 * 1024 * 1024;
    let written = 0;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      const chunk = Buffer.alloc(64 * 1024, 0x62);
      const pump = () => {
        while (written < total) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    };
    const res = await send('GET', '/v1/big/content', null);
    res.pause();
    await new Promise((r) => setTimeout(r, 700));
    // What the three sockets' buffers hold at most, far from all of it.
    expect(written).toBeLessThan(total / 2);
    const stalled = written;
    await new Promise((r) => setTimeout(r, 200));
    expect(written).toBe(stalled);
    const got = await readAll(res);
    expect(got.length).toBe(total);
    expect(written).toBe(total);
  });

  test('a client that leaves mid-stream aborts the upstream request', async () => {
    let upstreamClosed!: Promise<boolean>;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n');
      upstreamClosed = new Promise((resolve) => res.on('close', () => resolve(!res.writableFinished)));
    };
    const res = await send('POST', '/v1/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } }));
    await new Promise<void>((resolve) => res.once('data', () => resolve()));
    res.destroy();
    // The upstream's response closed before it finished: the gateway dropped the connection rather than read on.
    expect(await upstreamClosed).toBe(true);
  });
});
