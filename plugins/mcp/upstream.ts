import { performance } from 'node:perf_hooks';
import { GatewayError, type JsonRpcId, type Logger, type RequestContext, type UpstreamClient, type UpstreamResponse } from '../../sdk/index.js';
import { TimedOut } from './answers.js';
import { AuthorizationRequired, type Challenge, type OAuthFlow } from './oauth.js';
import type { McpCaller, McpConnection, McpServerConfig, McpSession } from './store/types.js';
import { declined as declinedAnswer, META, MODERN_VERSION, type Envelope } from './revision.js';

/** Ending an upstream session is a courtesy with a short leash. */
const END_SESSION_TIMEOUT_MS = 5_000;

/**
 * How the gateway talks to an upstream for one request: within the upstream's session (its id, the negotiated
 * version), or statelessly at 2026-07-28 with the client's envelope.
 */
export interface Wire {
  upstreamSessionId: string | null;
  envelope: Envelope | null;
  /** The protocol version of the upstream session (null: the client's header, or 2026-07-28 with an envelope). */
  version: string | null;
}

/** One call to an upstream MCP server. */
export interface UpstreamCall {
  method: 'POST' | 'GET';
  body: Buffer | null;
  /** The session whose upstream id goes with the call (null: none). */
  session: Pick<McpSession, 'upstreamSessionId'> | null;
  timeoutMs: number;
  accept?: string;
  lastEventId?: string;
  /** The MCP headers of a body the gateway wrote (else the client's own go with the body it sent). */
  headers?: Record<string, string>;
}

/** The client's `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers, which describe the body forwarded as sent. */
function forwardStandardHeaders(ctx: RequestContext, headers: Record<string, string>): void {
  for (const name in ctx.headers) {
    if (name !== 'mcp-method' && name !== 'mcp-name' && !name.startsWith('mcp-param-')) continue;
    const value = ctx.headers[name];
    if (typeof value === 'string' && value.length <= 1024) headers[name] = value;
  }
}

export interface UpstreamDeps {
  upstream: UpstreamClient;
  oauth: OAuthFlow;
  logger: Logger;
  /** The caller a connection belongs to. */
  caller(ctx: RequestContext): McpCaller;
  /** The OAuth redirect URI of the request's gateway. */
  redirectUri(ctx: RequestContext): string;
}

/**
 * The MCP gateway's calls to an upstream server: each with the server's auth
 * (a static header, or the user's OAuth token), recorded as the request's
 * attempts; and the courtesy calls that cancel a request or end a session.
 */
export class McpUpstream {
  readonly #d: UpstreamDeps;

  constructor(deps: UpstreamDeps) {
    this.#d = deps;
  }

  /**
   * One call to the upstream, with the server's auth: a static header, or
   * the user's OAuth token (refreshed when due, once more after a 401; with
   * none usable, {@link AuthorizationRequired}). Waits at most `timeoutMs`
   * for the answer's headers ({@link TimedOut}).
   */
  async call(
    ctx: RequestContext,
    server: McpServerConfig,
    connection: McpConnection,
    call: UpstreamCall,
  ): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { accept: call.accept ?? 'application/json, text/event-stream' };
    // Resuming a stream: the server replays what it sent after this event.
    if (call.lastEventId !== undefined) headers['last-event-id'] = call.lastEventId;
    if (call.body !== null) headers['content-type'] = 'application/json';
    if (call.headers !== undefined) {
      // A body the gateway wrote or changed (another protocol revision's): the headers that describe it are its own.
      Object.assign(headers, call.headers);
    } else {
      const version = ctx.header('mcp-protocol-version');
      if (version !== undefined && version.length <= 64) headers['mcp-protocol-version'] = version;
      // The standard headers naming what the forwarded body asks (2026-07-28: servers route on them, and check
      // them against the body); the body goes on as sent, so they do too.
      if (call.body !== null) forwardStandardHeaders(ctx, headers);
    }
    if (call.session?.upstreamSessionId) headers['mcp-session-id'] = call.session.upstreamSessionId;
    if (ctx.upstreamHeaders !== null) Object.assign(headers, ctx.upstreamHeaders);
    const auth = server.auth;
    if (auth.type === 'header') headers[auth.name] = auth.value;
    let token: string | null = null;
    if (auth.type === 'oauth') {
      token = await this.#d.oauth.accessToken(server, connection);
      if (token !== null) headers.authorization = `Bearer ${token}`;
    }
    let upstream = await this.#send(ctx, server, headers, call);
    if (auth.type !== 'oauth') return upstream;
    if (upstream.status === 401 && token === null) {
      // No token yet: the request went without one, as MCP's authorization asks, and the server's challenge says where
      // its metadata is and which scope it wants.
      upstream.body.discard();
      throw await this.#authorizationRequired(ctx, server, await this.#challenge(upstream));
    }
    if (upstream.status === 401) {
      upstream.body.discard();
      token = await this.#d.oauth.accessToken(server, connection, true);
      if (token === null) throw await this.#authorizationRequired(ctx, server, await this.#challenge(upstream));
      headers.authorization = `Bearer ${token}`;
      upstream = await this.#send(ctx, server, headers, call);
      if (upstream.status === 401) {
        upstream.body.discard();
        await this.#d.oauth.forget(connection);
        throw await this.#authorizationRequired(ctx, server, await this.#challenge(upstream));
      }
    }
    const challenge = upstream.status === 403 ? await this.#challenge(upstream) : null;
    if (challenge !== null && challenge.error === 'insufficient_scope') {
      // A step-up: the token lacks a scope this call needs. The user authorizes again for what the token had and what
      // the server asks now.
      upstream.body.discard();
      const granted = connection.tokens?.scope?.split(' ').filter((x) => x !== '') ?? [];
      const asked = challenge.scope?.split(' ').filter((x) => x !== '') ?? [];
      throw await this.#authorizationRequired(ctx, server, { ...challenge, scope: [...new Set([...granted, ...asked])].join(' ') || undefined });
    }
    return upstream;
  }

  async #send(ctx: RequestContext, server: McpServerConfig, headers: Record<string, string>, call: UpstreamCall): Promise<UpstreamResponse> {
    // The timeout covers the wait for headers; the answer's body has its own deadline (see the gateway's #answer), and a GET stream none.
    const timer = new AbortController();
    const clock = setTimeout(() => timer.abort(), call.timeoutMs);
    const started = performance.now();
    const attempt = { target: '0', provider: 'mcp', status: null as number | null, startMs: started - ctx.startedAt, latencyMs: 0, error: null as string | null };
    ctx.attempts.push(attempt);
    try {
      const upstream = await this.#d.upstream.send({ method: call.method, url: server.url, headers, body: call.body }, AbortSignal.any([ctx.signal, timer.signal]), call.timeoutMs);
      attempt.status = upstream.status;
      return upstream;
    } catch (err) {
      attempt.error = err instanceof GatewayError ? err.code : 'aborted';
      if (timer.signal.aborted || (err instanceof GatewayError && err.code === 'upstream_timeout')) throw new TimedOut();
      throw err;
    } finally {
      clearTimeout(clock);
      attempt.latencyMs = performance.now() - started;
      ctx.upstreamLatencyMs = (ctx.upstreamLatencyMs ?? 0) + attempt.latencyMs;
    }
  }

  #challenge(upstream: UpstreamResponse): Promise<Challenge | null> {
    return this.#d.oauth.challenge(upstream.headers['www-authenticate']);
  }

  async #authorizationRequired(ctx: RequestContext, server: McpServerConfig, challenge: Challenge | null = null): Promise<AuthorizationRequired> {
    const { url, expiresAt } = await this.#d.oauth.authorizationUrl(server, this.#d.caller(ctx), this.#d.redirectUri(ctx), challenge ?? undefined);
    return new AuthorizationRequired(url, expiresAt, server.name);
  }

  /**
   * Tells the upstream the gateway gave up on a request (MCP's notifications/cancelled), in the background. `wire`
   * says how the request went: its upstream session, or the envelope of a 2026-07-28 request (which the notification
   * carries too), and the protocol version.
   */
  cancel(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, wire: Wire, id: JsonRpcId, timeoutMs: number): void {
    const params: Record<string, unknown> = { requestId: id, reason: `The gateway's timeout of ${timeoutMs} ms passed.` };
    if (wire.envelope !== null) params._meta = { [META.protocolVersion]: MODERN_VERSION, [META.clientCapabilities]: wire.envelope.capabilities };
    const version = wire.envelope !== null ? MODERN_VERSION : (wire.version ?? ctx.header('mcp-protocol-version'));
    const headers: Record<string, string> = {};
    if (version !== undefined && version.length <= 64) headers['mcp-protocol-version'] = version;
    // The standard header naming the method (2026-07-28: servers route on it).
    headers['mcp-method'] = 'notifications/cancelled';
    this.#courtesy(server, connection, wire.upstreamSessionId, headers, { jsonrpc: '2.0', method: 'notifications/cancelled', params }, 'telling an MCP server of a cancelled request failed');
  }

  /** Answers a server's request to the client with a refusal, in the background: the client cannot be asked it (see revision.ts, `declined`). */
  decline(server: McpServerConfig, connection: McpConnection, wire: Wire, id: JsonRpcId): void {
    const headers: Record<string, string> = {};
    if (wire.version !== null) headers['mcp-protocol-version'] = wire.version;
    this.#courtesy(server, connection, wire.upstreamSessionId, headers, declinedAnswer(id), 'refusing an MCP server\'s request to the client failed');
  }

  /** A message the gateway posts on its own (no answer awaited), best effort. */
  #courtesy(server: McpServerConfig, connection: McpConnection, upstreamSessionId: string | null, extra: Record<string, string>, message: unknown, failure: string): void {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra };
    if (upstreamSessionId !== null) headers['mcp-session-id'] = upstreamSessionId;
    if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
    if (server.auth.type === 'oauth' && connection.tokens !== null) headers.authorization = `Bearer ${connection.tokens.access_token}`;
    this.#d.upstream
      .send({ method: 'POST', url: server.url, headers, body: Buffer.from(JSON.stringify(message)) }, AbortSignal.timeout(END_SESSION_TIMEOUT_MS), END_SESSION_TIMEOUT_MS)
      .then((r) => r.body.discard())
      .catch((err: unknown) => this.#d.logger.debug({ err, mcp_server_id: server.id }, failure));
  }

  /** Ends an upstream session (DELETE with its id), best effort. */
  async end(server: McpServerConfig, connection: McpConnection, upstreamSessionId: string): Promise<void> {
    const headers: Record<string, string> = { 'mcp-session-id': upstreamSessionId };
    if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
    if (server.auth.type === 'oauth' && connection.tokens !== null) headers.authorization = `Bearer ${connection.tokens.access_token}`;
    try {
      const r = await this.#d.upstream.send({ method: 'DELETE', url: server.url, headers, body: null }, AbortSignal.timeout(END_SESSION_TIMEOUT_MS), END_SESSION_TIMEOUT_MS);
      r.body.discard();
    } catch (err) {
      this.#d.logger.debug({ err, mcp_server_id: server.id }, 'ending an upstream MCP session failed');
    }
  }
}
