import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../core/index.js';

/*
 * Answers for what never reaches the gateway's handler: requests Node's HTTP
 * parser rejects (bad bytes, headers over the size limit, a method it does not
 * know), requests that did not arrive in time (`headersTimeout`,
 * `requestTimeout`), CONNECT, which Node hands to a 'connect' listener or
 * drops, and an HTTP/1.1 request without a Host header, which Node would
 * answer with a bare 400 itself (the server turns that check off and makes it
 * here). Without these, such clients got Node's bare status line, or nothing
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
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') {
    return new GatewayError('payload_too_large', 'The chunk extensions of the request body are larger than the limit of 16 KiB.');
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
 * `answering` tells whether an answer is being written on a socket, so a
 * timeout that fires mid-answer does not write a second status line.
 */
export function answerClientErrors(server: Server, answering: (socket: Socket) => boolean): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    // The peer is gone (reset, closed): nobody to answer.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    // An answer still being written owns the wire; one that has ended (an earlier request on this keep-alive connection) does not.
    answer(socket, toGatewayError(err), answering(socket as Socket));
  });
  // The gateway is no forward proxy: CONNECT is a method it does not allow, answered rather than dropped.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    answer(socket, new GatewayError('method_not_allowed', `Method CONNECT is not allowed on ${String(req.url).slice(0, 200)}.`), false);
  });
}

/**
 * What is wrong with a request's Host header, or null: RFC 9112 (3.2) asks for
 * a 400 when an HTTP/1.1 request has none, or any request has more than one
 * (Node keeps the first and says nothing). HTTP/1.0 needs none.
 */
export function hostProblem(req: IncomingMessage): string | null {
  if (req.headers.host === undefined) {
    return req.httpVersionMajor === 1 && req.httpVersionMinor === 1 ? 'An HTTP/1.1 request must carry a Host header.' : null;
  }
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') hosts++;
  return hosts > 1 ? 'The request carries more than one Host header.' : null;
}

/** The 400 for a {@link hostProblem}, in the envelope; the connection closes. Never reaches the gateway, so it is not logged. */
export function answerHostProblem(res: ServerResponse, problem: string): void {
  const body = JSON.stringify(new GatewayError('invalid_header', problem, { param: 'host' }).toEnvelope());
  res.shouldKeepAlive = false;
  res.writeHead(400, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}
