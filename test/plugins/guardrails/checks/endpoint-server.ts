import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenCall {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

/**
 * A local HTTP endpoint for webhook and log checks. `answer` decides per call;
 * returning nothing leaves the request hanging (a server that never answers).
 */
export async function startEndpoint(answer: (call: SeenCall, res: ServerResponse) => void) {
  const calls: SeenCall[] = [];
  const waiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        /* kept as text */
      }
      const call = { path: req.url ?? '/', headers: req.headers, body };
      calls.push(call);
      for (const w of waiters.splice(0)) w();
      answer(call, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    server,
    calls,
    /** Resolves once at least `n` calls arrived. */
    async waitForCalls(n: number, timeoutMs = 3000) {
      const until = Date.now() + timeoutMs;
      while (calls.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} calls, saw ${calls.length}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 20);
        });
      }
    },
    /** Drops every open connection (hanging requests fail with a reset). */
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function sendJson(res: ServerResponse, value: unknown, status = 200) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
