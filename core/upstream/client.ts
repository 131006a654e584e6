import type { Agent as AgentType } from 'undici';
import { Agent, errors as undiciErrors } from './undici.js';
import { GatewayError } from '../errors.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { OutboundOptions, StreamingUpstreamRequest, UpstreamResponse } from '../types.js';
import { UpstreamBody, upstreamBodyError, type DispatchController } from './body.js';
import { policyConnector } from './connect.js';
import { HostPolicy } from './host-policy.js';
import type { UpstreamSignal } from './signal.js';
import { withoutUserInfo } from './urls.js';

/** What an {@link UpstreamClient} is built with (the gateway's own takes them from its options). */
export interface UpstreamClientOptions {
  /** Keep-alive connections per upstream origin. */
  connections: number;
  /** Time to wait for an upstream's response headers, unless a call gives its own. */
  headersTimeoutMs: number;
  /** Longest pause between two chunks of an upstream's body. */
  bodyTimeoutMs: number;
  /** Where it may connect. Default: public addresses only (see {@link OutboundOptions}). */
  outbound?: OutboundOptions;
}

/**
 * All upstream HTTP goes through here: one undici Agent, which keeps one
 * keep-alive pool per origin and opens every connection through the host
 * policy (see {@link OutboundOptions}). Errors come back as GatewayErrors that
 * name the origin only (never the path or query, which may carry credentials).
 */
export class UpstreamClient {
  readonly #agent: AgentType;
  readonly #headersTimeout: number;
  readonly #bodyTimeout: number;
  readonly #policy: HostPolicy;
  readonly #connector: ReturnType<typeof policyConnector>;

  /** @throws Error when an `outbound.allowHosts` entry is not a host, host:port or address range. */
  constructor(options: UpstreamClientOptions) {
    this.#headersTimeout = options.headersTimeoutMs;
    this.#bodyTimeout = options.bodyTimeoutMs;
    this.#policy = new HostPolicy(options.outbound);
    this.#agent = new Agent({
      connections: options.connections,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      connect: (this.#connector = policyConnector(this.#policy, options.outbound?.resolve)),
    });
  }

  /**
   * Opens a TCP (or, with protocol `https:`, TLS) connection through the host policy, as every connection of
   * `send` is opened: for a plugin whose protocol undici does not speak (a WebSocket client's
   * `createConnection`). The callback gets the 400 `host_not_allowed` for a refused address.
   */
  connect(options: { hostname: string; port: string | number; protocol: 'http:' | 'https:'; servername?: string }, callback: (err: Error | null, socket: Socket | null) => void): void {
    this.#connector({ hostname: options.hostname, host: options.hostname, port: String(options.port), protocol: options.protocol, servername: options.servername ?? null } as never, callback as never);
  }

  /**
   * Throws the 400 the gateway answers for a URL it will not call: not
   * http(s), with user info, or an IP address the host policy refuses
   * (`host_not_allowed`, naming the host and how to allow it). A host name
   * passes: its addresses are checked when a connection opens. `send` checks
   * every URL itself; call this to refuse earlier, with a `param`.
   */
  checkUrl(url: string, param: string | null = null): void {
    this.#policy.check(url, param);
  }

  /**
   * Sends a request; resolves when the upstream's headers arrived, with the body unread (an
   * {@link UpstreamBody}: read it, stream it or discard it). A stream request body is sent as it is read.
   * Sent through undici's `dispatch`: the answer's chunks go from the socket to the body's consumer
   * with nothing in between (no Readable), and its backpressure pauses the socket.
   */
  send(request: StreamingUpstreamRequest, signal: AbortSignal | UpstreamSignal | null, headersTimeoutMs?: number): Promise<UpstreamResponse> {
    const url = request.url;
    const slash = url.indexOf('/', url.indexOf('//') + 2);
    const origin = slash === -1 ? url : url.slice(0, slash);
    const path = slash === -1 ? '/' : url.slice(slash);
    try {
      // The policy keeps the origins it passed, so this is a set lookup after the first request to an origin.
      this.#policy.check(origin);
    } catch (err) {
      return Promise.reject(err);
    }
    if (signal !== null && signal.aborted) return Promise.reject(signal.reason ?? new undiciErrors.RequestAbortedError());
    return new Promise((resolve, reject) => {
      const handler = new UpstreamHandler(resolve, reject, origin, signal);
      try {
        this.#agent.dispatch(
          {
            origin,
            path,
            method: request.method as 'POST',
            headers: request.headers,
            body: request.body,
            headersTimeout: headersTimeoutMs ?? this.#headersTimeout,
            bodyTimeout: this.#bodyTimeout,
          },
          handler,
        );
      } catch (err) {
        handler.onResponseError(null, err as Error);
      }
    });
  }

  /** Closes its connection pools; the gateway closes its own client in `Gateway.close`. */
  close(): Promise<void> {
    return this.#agent.close();
  }
}

function upstreamError(err: unknown, rawOrigin: string): unknown {
  if (err instanceof GatewayError) return err;
  // The origin as written may carry user info (a provider's base URL option, a stored slug): never print it.
  const origin = withoutUserInfo(rawOrigin);
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') return err;
  if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.ConnectTimeoutError) {
    return new GatewayError('upstream_timeout', `The upstream at ${origin} did not answer in time.`, { cause: err });
  }
  if (err instanceof undiciErrors.InvalidArgumentError) {
    return new GatewayError('invalid_request', `The upstream request to ${origin} is invalid: ${withoutUserInfo(err.message)}`, { cause: err });
  }
  const code = (err as { code?: string })?.code;
  const reason = code ? ` (${code})` : '';
  if (err instanceof undiciErrors.HTTPParserError) {
    return new GatewayError('upstream_invalid_response', `The upstream at ${origin} sent a malformed response${reason}.`, { cause: err });
  }
  return new GatewayError('upstream_unreachable', `The upstream at ${origin} is unreachable${reason}.`, { cause: err });
}

export { upstreamBodyError };

/**
 * One upstream call's dispatch handler (undici's handler API): resolves the call with its headers and an
 * {@link UpstreamBody}, pushes the chunks into that body, and ends it. One object per call, its methods on the
 * prototype (no closures per call).
 */
class UpstreamHandler {
  #resolve: (response: UpstreamResponse) => void;
  #reject: (err: unknown) => void;
  readonly #origin: string;
  #signal: AbortSignal | UpstreamSignal | null;
  #controller: DispatchController | null = null;
  #body: UpstreamBody | null = null;
  #settled = false;

  constructor(resolve: (response: UpstreamResponse) => void, reject: (err: unknown) => void, origin: string, signal: AbortSignal | UpstreamSignal | null) {
    this.#resolve = resolve;
    this.#reject = reject;
    this.#origin = origin;
    this.#signal = signal;
  }

  /** The caller's signal aborted: the call stops (before or after its headers), with the signal's reason. */
  readonly #onAbort = (): void => {
    const reason = this.#signal?.reason;
    this.#controller?.abort(reason instanceof Error ? reason : new undiciErrors.RequestAbortedError());
  };

  onRequestStart(controller: DispatchController): void {
    this.#controller = controller;
    const signal = this.#signal;
    if (signal === null) return;
    if (signal.aborted) this.#onAbort();
    else signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  onResponseStart(controller: DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    const body = new UpstreamBody(statusCode, controller);
    this.#body = body;
    this.#settled = true;
    this.#resolve({ status: statusCode, headers, body });
  }

  onResponseData(controller: DispatchController, chunk: Buffer): void {
    if (!this.#body!.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.#release();
    this.#body?.finish(null);
  }

  onResponseError(_controller: DispatchController | null, err: Error): void {
    this.#release();
    if (this.#body !== null) this.#body.finish(err);
    else if (!this.#settled) {
      this.#settled = true;
      this.#reject(upstreamError(err, this.#origin));
    }
  }

  #release(): void {
    const signal = this.#signal;
    if (signal !== null) {
      this.#signal = null;
      signal.removeEventListener('abort', this.#onAbort);
    }
  }
}
