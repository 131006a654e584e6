import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SeenNativeRequest } from '../../plugins/providers/contract.js';

/** A mock upstream on an ephemeral port that records each request (JSON bodies parsed) before handing it on. */
export async function startRecordingServer(
  handle: (req: IncomingMessage, res: ServerResponse, seen: SeenNativeRequest) => void,
): Promise<{ url: string; requests: SeenNativeRequest[]; server: Server; close(): Promise<void> }> {
  const requests: SeenNativeRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw === '' ? null : JSON.parse(raw);
      } catch {
        /* keep the text */
      }
      const seen = { method: req.method!, path: req.url!, headers: req.headers, body };
      requests.push(seen);
      handle(req, res, seen);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Writes SSE events one by one (separate writes, as a real upstream flushes them), then ends. */
export function writeEvents(res: ServerResponse, events: string[], contentType = 'text/event-stream; charset=utf-8'): void {
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
  for (const e of events) res.write(e);
  res.end();
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
