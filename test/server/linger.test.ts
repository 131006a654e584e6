import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { lingerIfBodyPending } from '../../server/linger.js';

/*
 * The lingering close touches the long-lived socket only for an answer sent before its body was all received.
 * A socket that kept a per-request hook held each request's objects past the young generation (five full
 * collections per 40,000 requests instead of one in the bench); these tests pin where the hook goes, not speed.
 */

let server: Server;
let port: number;
/** What the handler saw once each answer finished: whether the socket's destroySoon was still Node's own. */
const seen: { nodeOwn: boolean; complete: boolean }[] = [];
/** The server's side of the last connection. */
let serverSocket: Socket | undefined;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    lingerIfBodyPending(req, res);
    const socket = req.socket;
    serverSocket = socket;
    res.once('finish', () => seen.push({ nodeOwn: socket.destroySoon === Socket.prototype.destroySoon, complete: req.complete }));
    if (req.url === '/early') {
      // Answers before reading the body, closing the connection: the case the lingering close is for.
      res.writeHead(413, { connection: 'close', 'content-length': '2' }).end('no');
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-length': '2' }).end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('lingerIfBodyPending', () => {
  test('a request whose body was read leaves the socket as Node made it, request after request on one connection', async () => {
    seen.length = 0;
    const socket = new Socket();
    await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    for (let i = 0; i < 3; i++) {
      socket.write('POST /read HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 5\r\n\r\nhello');
      await expect.poll(() => (text.match(/HTTP\/1\.1 200/g) ?? []).length).toBe(i + 1);
    }
    socket.destroy();
    expect(seen).toEqual([
      { nodeOwn: true, complete: true },
      { nodeOwn: true, complete: true },
      { nodeOwn: true, complete: true },
    ]);
  });

  test('an answer that closes the connection before the body came lingers: the client gets it, then the end, while still sending', async () => {
    seen.length = 0;
    const socket = new Socket({ allowHalfOpen: true });
    await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve));
    let text = '';
    let ended = false;
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    let error: string | null = null;
    socket.on('end', () => (ended = true));
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.write('POST /early HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 100000\r\n\r\n');
    await expect.poll(() => ended).toBe(true);
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text.endsWith('no')).toBe(true);
    // The server reads on and drops what still comes (Node's own close would reset the connection under the client).
    for (let i = 0; i < 5; i++) {
      socket.write(Buffer.alloc(1000, 97));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(error).toBeNull();
    expect(serverSocket!.destroyed).toBe(false);
    // Node's own again once it lingers: the hook is for this answer only.
    expect(seen).toEqual([{ nodeOwn: true, complete: false }]);
    socket.destroy();
  });
});
