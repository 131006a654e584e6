import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { LightSignal } from '../../core/upstream/signal.js';
import { UpstreamClient } from '../../core/upstream/client.js';

test('LightSignal: listeners run once on abort, removed ones never; aborted and an AbortError reason after', () => {
  const signal = new LightSignal();
  const calls: string[] = [];
  const a = () => calls.push('a');
  const b = () => calls.push('b');
  signal.addEventListener('abort', a);
  signal.addEventListener('abort', b);
  signal.removeEventListener('abort', a);
  expect(signal.aborted).toBe(false);
  signal.abort();
  signal.abort();
  expect(calls).toEqual(['b']);
  expect(signal.aborted).toBe(true);
  expect((signal.reason as DOMException).name).toBe('AbortError');
});

test('undici takes a LightSignal: aborting it cancels the upstream call while it waits for headers', async () => {
  let seen: IncomingMessage | null = null;
  const closed = new Promise<void>((resolve) => {
    const server = createServer((req) => {
      seen = req;
      // Never answers; the call must end because the signal aborted, and the connection with it.
      req.socket.once('close', () => {
        server.close();
        resolve();
      });
    });
    server.listen(0, '127.0.0.1', () => run((server.address() as AddressInfo).port));
  });
  let result: Promise<unknown> = Promise.resolve();
  const signal = new LightSignal();
  const client = new UpstreamClient({ connections: 1, headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000, outbound: { allowPrivateHosts: true } });
  function run(port: number) {
    result = client.send({ method: 'POST', url: `http://127.0.0.1:${port}/v1/x`, headers: { 'content-type': 'application/json' }, body: '{}' }, signal);
    result.catch(() => undefined); // asserted below, once the server saw the connection close
    setTimeout(() => signal.abort(), 50);
  }
  await closed;
  expect(seen).not.toBeNull();
  await expect(result).rejects.toMatchObject({ name: expect.stringMatching(/Abort/) });
  await client.close();
});
