import type { Agent as AgentType } from 'undici';
import { Agent, errors as undiciErrors, request as undiciRequest } from './undici.js';
import { GatewayError } from '../errors.js';
import type { OutboundOptions, StreamingUpstreamRequest, UpstreamResponse } from '../types.js';
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
      connect: policyConnector(this.#policy, options.outbound?.resolve),
    });
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

  /** Sends a request; resolves when the upstream's headers arrived. The body is left unread. A stream body is sent as it is read. */
  async send(request: StreamingUpstreamRequest, signal: AbortSignal | UpstreamSignal | null, headersTimeoutMs?: number): Promise<UpstreamResponse> {
    const slash = request.url.indexOf('/', request.url.indexOf('//') + 2);
    const origin = slash === -1 ? request.url : request.url.slice(0, slash);
    const path = slash === -1 ? '/' : request.url.slice(slash);
    // The policy keeps the origins it passed, so this is a set lookup after the first request to an origin.
    this.#policy.check(origin);
    try {
      const r = await undiciRequest(this.#agent, {
        origin,
        path,
        method: request.method as 'POST',
        headers: request.headers,
        body: request.body,
        // undici takes anything with aborted, reason and abort listeners (see signal.ts).
        signal: signal as AbortSignal | null,
        headersTimeout: headersTimeoutMs ?? this.#headersTimeout,
        bodyTimeout: this.#bodyTimeout,
      });
      return { status: r.statusCode, headers: r.headers, body: r.body };
    } catch (err) {
      throw upstreamError(err, origin);
    }
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

/**
 * The gateway error for an upstream body that failed while it was read (after
 * the headers came): no data for `upstreamBodyTimeoutMs` is a 504, a
 * connection that broke off a 502. Null for anything else (a client that
 * went away, a bug), which the caller handles as before.
 */
export function upstreamBodyError(err: unknown): GatewayError | null {
  if (err instanceof GatewayError) return err;
  if (err instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError('upstream_timeout', 'The upstream stopped sending its answer: no data within the body timeout (upstream.bodyTimeoutMs).', { cause: err });
  }
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') return null;
  if (err instanceof undiciErrors.UndiciError || (err as { code?: string })?.code === 'ECONNRESET') {
    return new GatewayError('upstream_unreachable', 'The upstream connection broke off during the answer.', { cause: err });
  }
  return null;
}
