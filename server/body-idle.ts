import type { IncomingMessage, ServerResponse } from 'node:http';

/*
 * The body idle timeout (`server.bodyIdleTimeoutMs`). Node's `requestTimeout`
 * bounds a whole request (2 min by default), so a client that sends headers
 * and `content-length: 100` and then nothing holds its socket that long; 200
 * such clients hold 200 sockets. This watches the time between two pieces of
 * a body instead, with the socket's own inactivity timer (reads and writes
 * reset it; Node emits 'timeout' on the request while it is incomplete):
 * - the body reader (`readBody` in core/http) listens for it and answers 408
 *   `request_timeout` in the envelope, closing the connection;
 * - a body read as a stream by a handler that cannot be told (an upload) has
 *   its connection closed;
 * - a body nobody reads yet (the request is still in auth, or paused while
 *   the gateway is busy) is the gateway's wait, not the client's: watched again;
 * - once the body is complete the timer is turned off, so a slow or long
 *   answer is never cut by it;
 * - an answer sent before the body was read (a 401) keeps the connection
 *   while Node drops the rest of the body: the timer stays on (instead of
 *   the keep-alive one) until the body is complete, and a body that stops
 *   coming has its connection closed.
 */

/** Starts watching the body of a request that has one. */
export function watchBodyIdle(req: IncomingMessage, res: ServerResponse, idleMs: number): void {
  const socket = req.socket;
  socket.setTimeout(idleMs);
  req.on('timeout', () => {
    // readBody listens too, and answers: only a body nobody reads that way is left to this listener.
    if (req.listenerCount('timeout') > 1) return;
    if (req.readableFlowing === true) socket.destroy();
    else socket.setTimeout(idleMs);
  });
  // Node emits the timeout on the answer too; with the body complete the timer has done its job.
  res.on('timeout', () => {
    if (req.complete) socket.setTimeout(0);
  });
  // Runs after Node's own 'finish' listener, which set the keep-alive timer: the body still owes the next pause.
  res.once('finish', () => {
    if (!req.complete && !socket.destroyed) socket.setTimeout(idleMs);
  });
}

/** Whether a request announces a body (a length above 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}
