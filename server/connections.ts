import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/*
 * The server's open connections and the answers under way on each, so a
 * shutdown lets every request it accepted finish and never closes a
 * connection under a client that may be sending on it.
 *
 * HTTP/1.1 can tell a client "send nothing more here" only with
 * `connection: close` on an answer, and a connection can be closed safely
 * only when no request is on its way on it. So a shutdown:
 * 1. closes the listening socket (new connections are refused) but leaves
 *    idle keep-alive connections open: Node's `server.close()` destroys them
 *    at once, which resets a request a client sent on one at that moment
 *    (it never reached the gateway, and the client cannot tell whether it ran);
 * 2. gives every answer whose headers have not gone out `connection: close`;
 * 3. lets the gateway answer whatever still arrives with a 503 and
 *    `connection: close` (`Gateway.close`), and drain what it accepted;
 * 4. then closes each connection with no answer under way once its last
 *    answer is IDLE_CLOSE_GRACE_MS old: a client that sends its next request
 *    right after an answer (keep-alive answers already under way at the
 *    signal could not say `close`) gets that 503 rather than a reset.
 */

/** How long a connection whose answer just ended is kept for a request the client may already have sent on it. */
export const IDLE_CLOSE_GRACE_MS = 500;
/** How often the final step looks again at connections still answering or within their grace. */
const RECHECK_MS = 25;

interface Connection {
  /** Answers not yet closed: one, or more when a client pipelines. */
  answers: Set<ServerResponse>;
  /** When the last answer on it ended (or the connection opened). */
  idleSince: number;
}

export class Connections {
  readonly #server: Server;
  readonly #open = new Map<Socket, Connection>();
  #closing = false;

  constructor(server: Server) {
    this.#server = server;
    server.on('connection', (socket: Socket) => {
      this.#open.set(socket, { answers: new Set(), idleSince: performance.now() });
      socket.once('close', () => this.#open.delete(socket));
    });
  }

  /** Records an answer under way (call first thing for every request). */
  track(req: IncomingMessage, res: ServerResponse): void {
    const connection = this.#open.get(req.socket as Socket);
    if (connection === undefined) return;
    connection.answers.add(res);
    res.once('close', () => {
      connection.answers.delete(res);
      connection.idleSince = performance.now();
    });
    // Shutdown began between the signal and this request's dispatch: its answer (the gateway's 503) closes the connection.
    if (this.#closing) res.shouldKeepAlive = false;
  }

  /** True when an answer on this socket has started (its headers are out) and not ended: nothing else may be written on it. */
  answering(socket: Socket): boolean {
    const connection = this.#open.get(socket);
    if (connection === undefined) return false;
    for (const res of connection.answers) if (res.headersSent && !res.writableEnded) return true;
    return false;
  }

  /**
   * Steps 1 and 2: new connections are refused and answers not yet under way
   * will close their connection. Resolves once every connection has closed.
   */
  stopAccepting(): Promise<void> {
    this.#closing = true;
    // net.Server's close, not http.Server's: it stops accepting without destroying the idle keep-alive connections.
    const stopped = new Promise<void>((resolve) => NetServer.prototype.close.call(this.#server, () => resolve()));
    for (const connection of this.#open.values()) {
      for (const res of connection.answers) if (!res.headersSent) res.shouldKeepAlive = false;
    }
    return stopped;
  }

  /**
   * Step 4, once the gateway drained: waits for answers still under way (the
   * 503s) and closes each connection when idle for IDLE_CLOSE_GRACE_MS; at
   * `deadline` (a `performance.now()` time) every connection left is cut.
   */
  async closeAll(deadline: number): Promise<void> {
    for (;;) {
      const now = performance.now();
      let wait = Infinity;
      for (const [socket, connection] of this.#open) {
        if (connection.answers.size > 0) wait = Math.min(wait, RECHECK_MS);
        else if (now - connection.idleSince >= IDLE_CLOSE_GRACE_MS) socket.destroy();
        else wait = Math.min(wait, IDLE_CLOSE_GRACE_MS - (now - connection.idleSince));
      }
      if (wait === Infinity || now >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(wait, deadline - now))));
    }
    for (const socket of this.#open.keys()) socket.destroy();
  }
}
