import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../core/index.js';

/*
 * Answers for what never reaches the gateway's handler: requests Node's HTTP
 * parser rejects (bad bytes, headers over the size limit, a method it does not
 * know), requests that did not arrive in time (`headersTimeout`,
 * `requestTimeout`) and CONNECT, which Node hands to a 'connect' listener or
 * drops. Without these, such clients got Node's bare status line, or nothing
 * at all; now they get the one error envelope, with the connection closed
 * (the parser cannot tell where the next request would start).
 */

/** Which gateway error each parser or timeout error becomes. */
function toGatewayError(err: Error & { code?: string; reason?: string }): GatewayError {
  const code = err.code ?? '';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new GatewayError('request_timeout', 'The request was not received in time: its headers or body stopped arriving (server.headersTimeoutMs, server.requestTimeoutMs).');
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new GatewayError('headers_too_large', 'The request headers are larger than the limit of 16 KiB, all headers together.');
  }
  const reason = typeof err.reason === 'string' && err.reason !== '' ? err.reason : 'malformed request';
  if (code === 'HPE_INVALID_METHOD') return new GatewayError('invalid_request', `The request is not valid HTTP: ${reason} (an unknown method).`);
  if (code.includes('HEADER') || code === 'HPE_LF_EXPECTED' || code === 'HPE_CR_EXPECTED') {
    return new GatewayError('invalid_header', `The request headers are not valid HTTP: ${reason}.`);
  }
  return new GatewayError('invalid_request', `The request is not valid HTTP: ${reason}.`);
}

/** An error envelope as raw HTTP/1.1 bytes, closing the connection. */
function rawResponse(error: GatewayError, extra: Record<string, string> = {}): string {
  const body = JSON.stringify(error.toEnvelope());
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'close', ...extra };
  let head = `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return `${head}\r\n${body}`;
}

/**
 * Sends the envelope for a client error on a socket and closes it, unless a
 * response already started on it (then only closes it: a second status line
 * would corrupt the first answer).
 */
function answer(socket: Duplex, error: GatewayError, started: boolean, extra?: Record<string, string>): void {
  if (!started && socket.writable) {
    socket.end(rawResponse(error, extra));
    // A client that never reads must not keep the socket: give the answer a moment to flush, then let go.
    setTimeout(() => socket.destroy(), 1_000).unref();
  } else {
    socket.destroy();
  }
}

/**
 * Installs the `clientError` and `connect` handlers on a gateway server.
 * `responses` maps each socket to the response in progress on it, so a
 * timeout that fires mid-answer does not write a second status line.
 */
export function answerClientErrors(server: Server, responses: WeakMap<Duplex, ServerResponse>): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    // The peer is gone (reset, closed): nobody to answer.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    // A response still being written owns the wire; one that has ended (an earlier request on this keep-alive connection) does not.
    const current = responses.get(socket);
    answer(socket, toGatewayError(err), current !== undefined && current.headersSent && !current.writableEnded);
  });
  // The gateway is no forward proxy: CONNECT is a method it does not allow, answered rather than dropped.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    answer(socket, new GatewayError('method_not_allowed', `Method CONNECT is not allowed on ${String(req.url).slice(0, 200)}.`), false);
  });
}
