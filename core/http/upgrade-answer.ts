import { STATUS_CODES, validateHeaderName, validateHeaderValue, type IncomingMessage } from 'node:http';
import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { GatewayResponse } from '../types.js';
import { readResponseBody } from './write-response.js';

/** How long a refused upgrade's socket may stay half-open after its answer (a client that never closes its side). */
const CLOSE_AFTER_MS = 1000;

/**
 * An upgrade the gateway did not hand over (refused by auth, an unknown route, a route without a handler for it):
 * its answer written on the raw socket as a plain HTTP/1.1 response, then the connection closed (destroyed after a
 * second if the client keeps its side open). Such answers are the gateway's small error envelopes; a body that
 * cannot be read is dropped, the status still goes out.
 */
export async function writeUpgradeAnswer(socket: Duplex, response: GatewayResponse, extraHeaders: Record<string, string | string[]>): Promise<void> {
  if (socket.destroyed) return;
  let body: Buffer;
  try {
    body = response.body === null ? Buffer.alloc(0) : await readResponseBody(response.body);
  } catch {
    body = Buffer.alloc(0);
  }
  const headers: Record<string, string | string[]> = { ...extraHeaders, ...response.headers, connection: 'close', 'content-length': String(body.length) };
  delete headers['transfer-encoding'];
  let head = `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? 'Unknown'}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      // What node:http itself would refuse to write (a line break, a character outside latin1) is never written here.
      try {
        validateHeaderName(name);
        validateHeaderValue(name, v);
      } catch {
        continue;
      }
      head += `${name}: ${v}\r\n`;
    }
  }
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), CLOSE_AFTER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.end(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]));
}

/** Whether an upgrade asks for a WebSocket (the only protocol the gateway switches to). */
export function wantsWebSocket(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  return typeof upgrade === 'string' && upgrade.trim().toLowerCase() === 'websocket' && req.method === 'GET';
}

/**
 * Declines an upgrade the gateway does not speak (`h2c`, which `curl --http2` offers on every plain-HTTP request):
 * the request is handed back to the HTTP server that received it as an ordinary HTTP/1.1 request (its head rebuilt
 * without the upgrade headers, followed by whatever the client sent after it), so it is served as if the client had
 * not offered anything. False when the socket has no server to hand it to.
 */
export function declineUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
  const server = (socket as Duplex & { server?: EventEmitter }).server;
  if (server === undefined || server === null || typeof server.emit !== 'function') return false;
  let text = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (lower === 'upgrade' || lower === 'http2-settings') continue;
    let value = raw[i + 1]!;
    if (lower === 'connection') {
      const kept = value.split(',').map((t) => t.trim()).filter((t) => t !== '' && !/^(?:upgrade|http2-settings)$/i.test(t));
      if (kept.length === 0) continue;
      value = kept.join(', ');
    }
    text += `${name}: ${value}\r\n`;
  }
  socket.unshift(Buffer.concat([Buffer.from(`${text}\r\n`, 'latin1'), head]));
  server.emit('connection', socket);
  return true;
}
