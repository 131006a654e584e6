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
