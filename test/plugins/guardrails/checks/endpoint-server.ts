import type { ServerResponse } from 'node:http';
import { startRecordingServer, type SeenNativeRequest } from '../../../../server/testing/index.js';

/** A call the endpoint received: method, path, headers and the body (parsed when JSON). */
export type SeenCall = SeenNativeRequest;

/**
 * A local HTTP endpoint for webhook and log checks, on the kit's recording server. `answer` decides
 * per call; returning nothing leaves the request hanging (a server that never answers).
 */
export async function startEndpoint(answer: (call: SeenCall, res: ServerResponse) => void) {
  const waiters: Array<() => void> = [];
  const rec = await startRecordingServer((_req, res, call) => {
    for (const w of waiters.splice(0)) w();
    answer(call, res);
  });
  const calls = rec.requests;
  return {
    url: rec.url,
    server: rec.server,
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
    dropConnections: () => rec.server.closeAllConnections(),
    close: rec.close,
  };
}

export function sendJson(res: ServerResponse, value: unknown, status = 200) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
