import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayResponse } from '../types.js';
import { readResponseBody } from './write-response.js';

/**
 * An upgrade the gateway did not hand over (refused by auth, an unknown route, a route without a handler for it):
 * its answer written on the raw socket as a plain HTTP/1.1 response, then the connection closed. Such answers are
 * the gateway's small error envelopes; a body that cannot be read is dropped, the status still goes out.
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
      // A value with a line break would split the response: never written.
      if (!/[\r\n]/.test(v)) head += `${name}: ${v}\r\n`;
    }
  }
  socket.end(Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), body]));
}
