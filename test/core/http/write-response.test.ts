import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { expect, test } from 'vitest';
import { createLogger, RequestContext } from '../../../core/index.js';
import { writeResponse } from '../../../core/http/write-response.js';

test('a stream is pumped with backpressure: a client that stops reading stops the source', async () => {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const total = 4096; // 256 MiB if it were all read
  let produced = 0;
  const source = new Readable({
    read() {
      if (produced >= total) return this.push(null);
      produced++;
      this.push(chunk);
    },
  });
  let finished: Promise<void> | null = null;
  const server = createServer((req, res) => {
    const ctx = new RequestContext('GET', '/', req.headers, new AbortController().signal, createLogger({ level: 'silent' }));
    finished = writeResponse(res, ctx, { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: source, observers: null });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  // Read a little, then stop reading entirely.
  await new Promise((r) => socket.once('data', r));
  socket.pause();
  await new Promise((r) => setTimeout(r, 500));
  // Only socket and stream buffers' worth was pulled, not the whole body.
  expect(produced * chunk.length).toBeLessThan(32 * 1024 * 1024);
  expect(produced).toBeLessThan(total);
  socket.destroy();
  await finished;
  server.close();
  // The client left: the source was destroyed rather than drained.
  expect(source.destroyed).toBe(true);
});

test('an SSE body sends its headers at once when it has no data yet, and with its first chunk (one write) when it has', async () => {
  const flushes: string[] = [];
  let quiet: Readable | null = null;
  const server = createServer((req, res) => {
    const flush = res.flushHeaders.bind(res);
    res.flushHeaders = () => {
      flushes.push(req.url!);
      flush();
    };
    const ctx = new RequestContext('GET', req.url!, req.headers, new AbortController().signal, createLogger({ level: 'silent' }));
    const body = new Readable({ read() {} });
    if (req.url === '/ready') {
      // A chat stream whose first chunk came with the upstream's headers.
      body.push('data: {"n":1}\n\n');
      body.push(null);
    } else quiet = body;
    void writeResponse(res, ctx, { status: 200, headers: { 'content-type': 'text/event-stream' }, body, observers: null });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    // Nothing to send for now: the client still gets its status and headers (it would wait for the first event otherwise).
    const res = await fetch(`${url}/quiet`, { signal: AbortSignal.timeout(2000) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(flushes).toEqual(['/quiet']);
    quiet!.push('data: {"n":2}\n\n');
    quiet!.push(null);
    expect(await res.text()).toBe('data: {"n":2}\n\n');
    // Data at hand: no separate flush, the headers go out with it.
    const ready = await fetch(`${url}/ready`);
    expect(await ready.text()).toBe('data: {"n":1}\n\n');
    expect(flushes).toEqual(['/quiet']);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
