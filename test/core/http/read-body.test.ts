import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { GatewayError } from '../../../core/errors.js';
import { readBody } from '../../../core/http/read-body.js';

/*
 * readBody and the request's own timeout: a body that stops arriving while it
 * is read (Node emits 'timeout' on the incomplete request when the socket's
 * inactivity timer, set with req.setTimeout, expires) is a 408 that closes the
 * connection; a body that arrives in time is read whole.
 */
let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server === null ? r() : server.close(() => r())));
  server = null;
});

/** A server whose handler arms a 100 ms body timeout and reports what readBody settled with. */
async function serve(): Promise<{ port: number; outcome: Promise<Buffer | GatewayError> }> {
  let settle!: (value: Buffer | GatewayError) => void;
  const outcome = new Promise<Buffer | GatewayError>((r) => (settle = r));
  server = createServer((req: IncomingMessage, res) => {
    req.setTimeout(100);
    readBody(req, 1024).then(settle, settle);
    void outcome.then(() => res.end());
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, outcome };
}

test('a body that stops arriving: 408 request_timeout, with connection: close', async () => {
  const { port, outcome } = await serve();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"a"');
  const error = await outcome;
  socket.destroy();
  expect(error).toBeInstanceOf(GatewayError);
  expect((error as GatewayError).code).toBe('request_timeout');
  expect((error as GatewayError).status).toBe(408);
  expect((error as GatewayError).headers).toEqual({ connection: 'close' });
  expect((error as GatewayError).message).toContain('nothing of it came for 100 ms');
});

test('a body whose pieces each come within the timeout is read whole', async () => {
  const { port, outcome } = await serve();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n');
  for (const piece of ['01234', '56789']) {
    await new Promise((r) => setTimeout(r, 50));
    socket.write(piece);
  }
  const body = await outcome;
  socket.destroy();
  expect(Buffer.isBuffer(body) ? body.toString() : body).toBe('0123456789');
});
