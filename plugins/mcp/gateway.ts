import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import {
  GatewayError,
  type GatewayResponse,
  type GuardrailRunner,
  isObject,
  JSONRPC,
  JsonRpcError,
  jsonRpcErrorBody,
  type JsonRpcId,
  type JsonRpcMessage,
  jsonResponse,
  type Logger,
  readJsonRpc,
  type RequestContext,
  setJsonRpcId,
  type UpstreamClient,
  type UpstreamResponse,
} from '../../sdk/index.js';
import { headerValue, isEventStream, MCP_CODES, readWithin, rpcAnswer, TIMED_OUT, TimedOut, timeoutAnswer, timeoutError, upstreamFailure } from './answers.js';
import { messageEvent, relayEvents, type RelayedMessage } from './events.js';
import { listenFilter, honoredFilter, listenNotification } from './listen.js';
import { checkToolCall, judgeAnswer, type Forwarded } from './judge.js';
import { AuthorizationRequired, type OAuthFlow } from './oauth.js';
import type { McpCaller, McpConnection, McpServerConfig, McpServerStore, McpSession, McpSessionToEnd } from './store/types.js';
import { SessionStreams } from './streams.js';
import { sessionDigest } from './store/store.js';
import { McpUpstream, type Wire } from './upstream.js';
import { mcpError } from './errors.js';
import { refusesRevision, UpstreamEras } from './eras.js';
import { SessionLinks } from './links.js';
import {
  asksForInput,
  checkModernRequest,
  claimsModern,
  discoverResult,
  envelopeOf,
  initializeResult,
  META,
  MODERN_VERSION,
  modernAnswer,
  modernHeaders,
  REMOVED_METHODS,
  type Envelope,
  type RevisionRefusal,
  type SessionServer,
  withEnvelope,
  withoutEnvelope,
} from './revision.js';

export interface GatewayOptions {
  /** Default wait for an answer to one forwarded request, in ms (a server's `request_timeout_ms` wins). */
  requestTimeoutMs: number;
  /** A session unused this long is ended, in ms. */
  sessionIdleTimeoutMs: number;
  /** Largest JSON answer read whole (SSE answers are streamed), in bytes. */
  maxAnswerBytes: number;
  /** The gateway's public base URL (for the OAuth redirect URI), or null to derive it from the request. */
  publicUrl: string | null;
  basePath: string;
  maxJsonDepth: number;
  now: () => number;
}

export interface GatewayDeps {
  store: () => McpServerStore;
  upstream: UpstreamClient;
  oauth: OAuthFlow;
  guardrails: () => GuardrailRunner | undefined;
  logger: Logger;
}

/** How often a session's last use is written (a busy session would otherwise write on every call). */
const TOUCH_EVERY_MS = 60_000;
/** What an upstream's error answer is read of, to find a JSON-RPC error in it. */
const ERROR_BODY_BYTES = 64 * 1024;

/**
 * The MCP gateway: serves each registered server at `/v1/mcp/{id}` over the
 * Streamable HTTP transport, as a careful proxy. Every message is read and
 * judged (the allow-list, guardrails, the log), then forwarded as sent; the
 * answer is forwarded as the upstream sent it (JSON, or an event stream
 * relayed event by event), except the `tools/list` result, filtered to the
 * allowed tools, and the `tools/call` result, checked by output guardrails.
 * The gateway issues its own session ids, bound to the key that opened the
 * session and to the caller's connection, and keeps the upstream's own id
 * sealed beside them; a revoked connection's sessions stop at once.
 */
export class McpGateway {
  readonly #o: GatewayOptions;
  readonly #d: GatewayDeps;
  readonly #touched = new Map<string, number>();
  readonly #streams = new SessionStreams();
  readonly #upstream: McpUpstream;
  readonly #eras: UpstreamEras;
  readonly #links: SessionLinks;

  constructor(options: GatewayOptions, deps: GatewayDeps) {
    this.#o = options;
    this.#d = deps;
    this.#upstream = new McpUpstream({ upstream: deps.upstream, oauth: deps.oauth, logger: deps.logger, caller: (ctx) => this.caller(ctx), redirectUri: (ctx) => this.redirectUri(ctx) });
    this.#eras = new UpstreamEras(this.#upstream);
    this.#links = new SessionLinks(this.#upstream);
  }

  // POST /v1/mcp/{id}: one JSON-RPC message.
  async post(ctx: RequestContext): Promise<GatewayResponse> {
    const server = await this.#server(ctx);
    let message: JsonRpcMessage;
    let kind: ReturnType<typeof readJsonRpc>['kind'];
    try {
      ({ message, kind } = readJsonRpc(ctx.rawBody, this.#o.maxJsonDepth));
    } catch (err) {
      if (!(err instanceof JsonRpcError)) throw err;
      ctx.error = mcpError('mcp_invalid_message', err.message);
      return jsonResponse(err.status, jsonRpcErrorBody(null, { code: err.code, message: err.message }));
    }
    setJsonRpcId(ctx, message.id);
    if (kind !== 'response') ctx.logFields.rpc_method = message.method;
    // 2026-07-28: the request names its revision in its _meta, and needs no session (a stray session header is ignored).
    if (kind !== 'response' && claimsModern(message)) return this.#stateless(ctx, server, message, kind === 'request');
    if (kind !== 'response' && ctx.header('mcp-protocol-version') === MODERN_VERSION && ctx.header('mcp-session-id') === undefined) {
      return this.#refuse(ctx, message.id ?? null, {
        status: 400,
        code: JSONRPC.INVALID_PARAMS,
        message: `Invalid params: the MCP-Protocol-Version header names ${MODERN_VERSION}, but the request has no _meta envelope (${META.protocolVersion}, ${META.clientCapabilities}).`,
        data: { envelope: { missing: ['_meta'] } },
      });
    }
    if (kind === 'request' && message.method === 'initialize') return this.#initialize(ctx, server, message);

    const { session, connection } = await this.#session(ctx, server);
    if (session.envelope !== null) return this.#sessionOnStateless(ctx, server, connection, session, message, kind);
    const wire: Wire = { upstreamSessionId: session.upstreamSessionId, envelope: null, version: null };
    if (kind !== 'request') {
      // Notifications and the client's answers (to sampling, elicitation) pass as they are; the upstream acknowledges them.
      const upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs: this.#timeout(server) });
      return this.#acknowledgement(ctx, upstream, session);
    }

    const { forwarded: request, refused } = await this.#checked(ctx, server, message, true);
    if (refused !== null) return refused;
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs });
    } catch (err) {
      return this.#callFailure(ctx, server, connection, wire, request.id, timeoutMs, err);
    }
    return this.#answer(ctx, server, connection, session, request, upstream, deadline, timeoutMs, { wire, translate: null, declineRequests: false, stream: 'answer' });
  }

  /** What a failed upstream call is answered with: a timeout (the upstream told), an authorization to give, the server unreachable. */
  #callFailure(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, wire: Wire, id: JsonRpcId, timeoutMs: number, err: unknown, sent = true): GatewayResponse {
    if (err instanceof TimedOut) {
      // The upstream is told only of a request it was sent (not of the gateway's own discover or initialize).
      if (sent && id !== null) this.#upstream.cancel(ctx, server, connection, wire, id, timeoutMs);
      return timeoutAnswer(ctx, id, timeoutMs);
    }
    if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, id, err);
    if (err instanceof GatewayError && err.code !== 'host_not_allowed') return upstreamFailure(ctx, id, `The MCP server "${server.name}" could not be reached: ${err.message}`, null);
    throw err;
  }

  /** The request as it is forwarded, and its refusal when it is a tool call the allow-list or the input guardrails stop (null: it goes on). */
  async #checked(ctx: RequestContext, server: McpServerConfig, message: JsonRpcMessage, request: boolean): Promise<{ forwarded: Forwarded; refused: GatewayResponse | null }> {
    const forwarded: Forwarded = { id: message.id ?? null, method: message.method!, tool: null, params: isObject(message.params) ? message.params : {} };
    const refused = request && forwarded.method === 'tools/call' ? await checkToolCall(ctx, server, forwarded, this.#d.guardrails()) : null;
    return { forwarded, refused };
  }

  /** A refusal before anything is forwarded, with its HTTP status (2026-07-28 answers its envelope's and headers' faults with 400). */
  #refuse(ctx: RequestContext, id: JsonRpcId, refusal: RevisionRefusal): GatewayResponse {
    ctx.error = mcpError('mcp_invalid_message', refusal.message);
    return jsonResponse(refusal.status, jsonRpcErrorBody(id, { code: refusal.code, message: refusal.message, data: refusal.data }));
  }

  /**
   * A 2026-07-28 request: no session. It is checked as a 2026-07-28 server checks it, judged as any request is, and
   * sent on as it came to an upstream that speaks 2026-07-28; to one that speaks only the session revisions, it goes
   * within a session the gateway keeps for the caller's connection ({@link SessionLinks}), without its envelope, and
   * the answer comes back as 2026-07-28 has it (see revision.ts).
   */
  async #stateless(ctx: RequestContext, server: McpServerConfig, message: JsonRpcMessage, request: boolean): Promise<GatewayResponse> {
    const id = message.id ?? null;
    const refusal = checkModernRequest(ctx, message, request);
    if (refusal !== null) return this.#refuse(ctx, id, refusal);
    const envelope = envelopeOf(message)!;
    const connection = (await this.#d.store().connection(server, this.caller(ctx), true))!;
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    const direct: Wire = { upstreamSessionId: null, envelope, version: null };
    let era: Awaited<ReturnType<UpstreamEras['of']>>;
    try {
      era = await this.#eras.of(ctx, server, connection, envelope, timeoutMs);
    } catch (err) {
      return this.#callFailure(ctx, server, connection, direct, id, timeoutMs, err, false);
    }
    const method = message.method!;
    const { forwarded, refused } = await this.#checked(ctx, server, message, request);
    if (refused !== null) return refused;
    const stream = method === 'subscriptions/listen' ? 'listen' : 'answer';

    if (era.modern) {
      let upstream: UpstreamResponse;
      try {
        upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session: null, timeoutMs });
      } catch (err) {
        return this.#callFailure(ctx, server, connection, direct, request ? id : null, timeoutMs, err);
      }
      if (!request) return this.#acknowledgement(ctx, upstream, null);
      if (refusesRevision(upstream.status)) this.#eras.forget(server); // it may speak otherwise now
      return this.#answer(ctx, server, connection, null, forwarded, upstream, deadline, timeoutMs, { wire: direct, translate: null, declineRequests: false, stream });
    }

    // A session server: what 2026-07-28 removed, or answers without the server, is answered here.
    if (request && REMOVED_METHODS.has(method)) {
      ctx.error = mcpError('mcp_invalid_message', `Method not found: ${method} is not part of MCP ${MODERN_VERSION}.`);
      return jsonResponse(404, jsonRpcErrorBody(id, { code: JSONRPC.METHOD_NOT_FOUND, message: 'Method not found' }));
    }
    if (!request && !NOTIFICATIONS_FORWARDED.has(method)) return accepted();
    for (let tries = 0; ; tries++) {
      let link: Awaited<ReturnType<SessionLinks['get']>>;
      try {
        link = await this.#links.get(ctx, server, connection, Math.max(1, Math.ceil(deadline - performance.now())));
      } catch (err) {
        return this.#callFailure(ctx, server, connection, direct, id, timeoutMs, err, false);
      }
      if (method === 'server/discover') return jsonResponse(200, { jsonrpc: '2.0', id, result: discoverResult(link.server) });
      const wire: Wire = { upstreamSessionId: link.upstreamSessionId, envelope: null, version: link.server.protocolVersion };
      if (method === 'subscriptions/listen') return this.#listenOnSession(ctx, server, connection, forwarded, link.server, wire);
      let upstream: UpstreamResponse;
      try {
        upstream = await this.#upstream.call(ctx, server, connection, {
          method: 'POST',
          body: withoutEnvelope(message),
          session: wire,
          timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
          headers: { 'mcp-protocol-version': link.server.protocolVersion },
        });
      } catch (err) {
        return this.#callFailure(ctx, server, connection, wire, request ? id : null, timeoutMs, err);
      }
      if (upstream.status === 404 && link.upstreamSessionId !== null) {
        // The server lost the session (it restarted): a new one, once.
        upstream.body.discard();
        this.#links.drop(server, connection);
        if (tries === 0) continue;
        return upstreamFailure(ctx, id, `The MCP server "${server.name}" lost the gateway's session twice.`, 404);
      }
      if (!request) return this.#acknowledgement(ctx, upstream, null);
      const serverInfo = link.server.serverInfo;
      return this.#answer(ctx, server, connection, null, forwarded, upstream, deadline, timeoutMs, {
        wire,
        translate: (m) => modernAnswer(m, method, serverInfo),
        declineRequests: true,
        stream,
      });
    }
  }

  /**
   * `subscriptions/listen` for a session server: the acknowledgement (what the server can tell: the list changes it
   * announces, the resources it lets a client subscribe to) on a stream of the gateway's, then the server's
   * notifications from its GET stream of the gateway's session, those asked for only, each naming the
   * subscription. Resources are subscribed to in that session. The stream lasts until the client leaves, the
   * server ends its stream, or the connection is revoked.
   */
  async #listenOnSession(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, request: Forwarded, sessionServer: SessionServer, wire: Wire): Promise<GatewayResponse> {
    const filter = listenFilter(request.params);
    if (filter === null) return rpcAnswer(request.id, JSONRPC.INVALID_PARAMS, 'Invalid params: subscriptions/listen needs params.notifications, the notifications to send.');
    const honored = honoredFilter(filter, sessionServer.capabilities);
    const timeoutMs = this.#timeout(server);
    const headers = { 'mcp-protocol-version': sessionServer.protocolVersion };
    for (const uri of honored.resourceSubscriptions ?? []) {
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: `gateway-subscribe-${randomBytes(6).toString('hex')}`, method: 'resources/subscribe', params: { uri } }));
      try {
        (await this.#upstream.call(ctx, server, connection, { method: 'POST', body, session: wire, timeoutMs, headers })).body.discard();
      } catch (err) {
        return this.#callFailure(ctx, server, connection, wire, request.id, timeoutMs, err);
      }
    }
    let events: Readable | null = null;
    try {
      const upstream = await this.#upstream.call(ctx, server, connection, { method: 'GET', body: null, session: wire, timeoutMs, accept: 'text/event-stream', headers });
      if (upstream.status === 200 && isEventStream(upstream)) events = upstream.body.readable();
      else upstream.body.discard();
    } catch (err) {
      return this.#callFailure(ctx, server, connection, wire, request.id, timeoutMs, err);
    }
    ctx.stream = true;
    const ack = listenNotification('notifications/subscriptions/acknowledged', { notifications: events === null ? {} : honored }, request.id);
    const opening = messageEvent(ack);
    if (events === null) {
      // Nothing can come (the server keeps no stream): acknowledged with nothing, and ended as a server ends one.
      const done = { jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [META.subscriptionId]: request.id } } };
      return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: opening + messageEvent(done), observers: null };
    }
    this.#streams.track(connectionStreams(connection), events);
    const relayed = relayEvents(events, {
      isAnswer: () => false,
      onMessage: (m) => (typeof m.method === 'string' && !('id' in m) ? listenNotification(m.method, m.params, request.id, honored) : null),
      deadline: null,
      onFailure: () => null,
      maxEventBytes: this.#o.maxAnswerBytes,
    });
    const body = Readable.from(
      (async function* () {
        yield Buffer.from(opening);
        yield* relayed;
      })(),
    );
    body.once('close', () => relayed.destroy());
    return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body, observers: null };
  }

  /**
   * A request of a session whose upstream speaks only 2026-07-28: sent with the envelope the client declared at
   * initialize and the standard headers; what 2026-07-28 removed is answered here (ping, the log level) or refused.
   */
  async #sessionOnStateless(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, session: McpSession, message: JsonRpcMessage, kind: string): Promise<GatewayResponse> {
    const envelope = session.envelope!;
    const id = message.id ?? null;
    if (kind === 'response') return accepted(); // it asked nothing: 2026-07-28 servers cannot
    const method = message.method!;
    const request = kind === 'request';
    if (!request && !NOTIFICATIONS_FORWARDED.has(method)) return accepted();
    if (method === 'ping' || method === 'logging/setLevel') return jsonResponse(200, { jsonrpc: '2.0', id, result: {} });
    if (REMOVED_METHODS.has(method)) return rpcAnswer(id, JSONRPC.METHOD_NOT_FOUND, `Method not found: the MCP server speaks ${MODERN_VERSION}, which has no ${method}.`);
    const wire: Wire = { upstreamSessionId: null, envelope, version: MODERN_VERSION };
    const { forwarded, refused } = await this.#checked(ctx, server, message, request);
    if (refused !== null) return refused;
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: withEnvelope(message, envelope), session: null, timeoutMs, headers: modernHeaders(method, message.params, request) });
    } catch (err) {
      return this.#callFailure(ctx, server, connection, wire, request ? id : null, timeoutMs, err);
    }
    if (!request) return this.#acknowledgement(ctx, upstream, null);
    return this.#answer(ctx, server, connection, null, forwarded, upstream, deadline, timeoutMs, {
      wire,
      // A session client cannot answer a 2026-07-28 question (it would need the server's requests on a stream).
      translate: (m) => (asksForInput(m) ? inputUnavailable(m, server.name) : m),
      declineRequests: false,
      stream: 'answer',
    });
  }

  // GET /v1/mcp/{id}: the stream of the server's own messages (requests, notifications) for a session.
  async get(ctx: RequestContext): Promise<GatewayResponse> {
    const server = await this.#server(ctx);
    const { session, connection } = await this.#session(ctx, server);
    // An upstream that speaks only 2026-07-28 has no such stream (its notifications come on subscriptions/listen).
    if (session.envelope !== null) return { status: 405, headers: { allow: 'POST, DELETE' }, body: null, observers: null };
    const lastEventId = ctx.header('last-event-id');
    if (lastEventId !== undefined && lastEventId.length <= 4096) {
      const resumed = await this.#resumeForClient(ctx, server, connection, session, ctx.header('mcp-session-id')!, lastEventId);
      if (resumed !== null) return resumed;
    }
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'GET', body: null, session, timeoutMs: this.#timeout(server), accept: 'text/event-stream' });
    } catch (err) {
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, null, err);
      if (err instanceof TimedOut) return timeoutAnswer(ctx, null, this.#timeout(server), 504);
      throw err;
    }
    if (!isEventStream(upstream)) {
      // 405: the server offers no such stream, which clients expect and handle.
      upstream.body.discard();
      if (upstream.status === 404 && session.upstreamSessionId !== null) return this.#sessionGone(ctx, session);
      return { status: upstream.status >= 400 ? upstream.status : 502, headers: {}, body: null, observers: null };
    }
    ctx.stream = true;
    const sessionId = ctx.header('mcp-session-id')!;
    // The relay reads a Node stream (it is not on the chat path): the upstream body's own view of itself.
    const events = upstream.body.readable();
    const stream = relayEvents(events, {
      isAnswer: () => false,
      // Answers belong on the stream of the request they answer; one here would be a replay past the checks.
      onMessage: (m) => ('method' in m ? m : null),
      deadline: null,
      onFailure: () => null,
      maxEventBytes: this.#o.maxAnswerBytes,
    });
    // Tracked by its upstream side: destroying that ends the relay cleanly (the client's response ends; a destroyed
    // relay would leave it open).
    this.#streams.track(sessionId, events);
    return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: stream, observers: null };
  }

  // DELETE /v1/mcp/{id}: the client ends its session.
  async delete(ctx: RequestContext): Promise<GatewayResponse> {
    const server = await this.#server(ctx);
    const { session, connection } = await this.#session(ctx, server);
    const sessionId = ctx.header('mcp-session-id')!;
    await this.#d.store().deleteSession(sessionId);
    this.#streams.close(sessionId);
    if (session.upstreamSessionId !== null) await this.#upstream.end(server, connection, session.upstreamSessionId);
    return { status: 200, headers: {}, body: null, observers: null };
  }

  /** Ends sessions for the store (a revoked connection, an archived server): upstream and on this instance. */
  closeSessions(server: McpServerConfig, connection: McpConnection, sessions: readonly McpSessionToEnd[]): void {
    this.#streams.close(connectionStreams(connection));
    void this.#links.end({ server, connection }, (link) => this.#upstream.end(server, connection, link.upstreamSessionId!));
    for (const s of sessions) {
      this.#streams.closeByDigest(s.sessionId);
      if (s.upstreamSessionId !== null) void this.#upstream.end(server, connection, s.upstreamSessionId);
    }
  }

  /** Closes this instance's streams whose sessions ended elsewhere (revoked on another instance, expired). */
  async sweepStreams(): Promise<void> {
    if (this.#streams.size === 0) return;
    // A stateless client's subscriptions are kept by connection, not session: its revocation closes them (closeSessions).
    const ids = this.#streams.sessionIds().filter((id) => !id.startsWith(CONNECTION_STREAMS));
    const live = await this.#d.store().liveSessions(ids);
    for (const id of ids) if (!live.has(id)) this.#streams.close(id);
  }

  /** Deletes sessions idle longer than the timeout. */
  async sweepSessions(): Promise<number> {
    // The sessions this instance keeps upstream for stateless clients idle out as clients' sessions do.
    await this.#links.end({ idleBefore: performance.now() - this.#o.sessionIdleTimeoutMs }, async () => undefined);
    return this.#d.store().deleteIdleSessions(this.#o.now() - this.#o.sessionIdleTimeoutMs);
  }

  /** Closes every stream (the gateway is closing). */
  closeAll(): void {
    this.#streams.closeAll();
  }

  /** The redirect URI of the OAuth flow: `<public URL><base>/mcp/oauth/callback`. */
  redirectUri(ctx: RequestContext): string {
    let origin = this.#o.publicUrl;
    if (origin === null) {
      const forwarded = ctx.header('x-forwarded-proto')?.split(',')[0]?.trim();
      const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : 'http';
      origin = `${proto}://${ctx.header('host') ?? 'localhost'}`;
    }
    return `${origin.replace(/\/+$/, '')}${this.#o.basePath}/mcp/oauth/callback`;
  }

  /** The caller a connection belongs to. */
  caller(ctx: RequestContext): McpCaller {
    return { userId: ctx.auth?.userId ?? null, apiKeyId: ctx.auth?.keyId ?? 'anonymous' };
  }

  /** The server of the path (the routes carry the scope, completions.write, checked by the core); unknown, archived or another workspace's: 404. */
  async server(ctx: RequestContext): Promise<McpServerConfig> {
    return this.#server(ctx);
  }

  async #server(ctx: RequestContext): Promise<McpServerConfig> {
    const id = ctx.params!.id!;
    const server = await this.#d.store().server(ctx, id);
    if (server === undefined) throw new GatewayError('not_found', `No MCP server "${id.slice(0, 128)}".`, { param: 'id' });
    return server;
  }

  #timeout(server: McpServerConfig): number {
    return server.requestTimeoutMs ?? this.#o.requestTimeoutMs;
  }

  /** The session the request names, checked: it exists, is this server's and this key's, is not idle too long, and its connection stands. */
  async #session(ctx: RequestContext, server: McpServerConfig): Promise<{ session: McpSession; connection: McpConnection }> {
    const sessionId = ctx.header('mcp-session-id');
    if (sessionId === undefined || sessionId === '') {
      throw mcpError('mcp_session_required', 'Bad request: an mcp-session-id header is required; send initialize first to open a session.', { param: 'mcp-session-id' });
    }
    const store = this.#d.store();
    const gone = () => mcpError('mcp_session_not_found', 'Session not found: it ended, expired or was revoked; send initialize to open a new one.', { param: 'mcp-session-id' });
    const session = sessionId.length > 256 ? undefined : await store.session(sessionId);
    const caller = this.caller(ctx);
    if (session === undefined || session.serverId !== server.id || session.apiKeyId !== caller.apiKeyId) throw gone();
    const now = this.#o.now();
    if (now - Math.max(session.lastUsedAt, this.#touched.get(sessionId) ?? 0) > this.#o.sessionIdleTimeoutMs) {
      await store.deleteSession(sessionId);
      throw gone();
    }
    const connection = await store.connection(server, caller, false);
    if (connection === undefined || connection.id !== session.connectionId) throw gone();
    if (now - (this.#touched.get(sessionId) ?? session.lastUsedAt) >= TOUCH_EVERY_MS) {
      if (this.#touched.size > 10_000) this.#touched.clear();
      this.#touched.set(sessionId, now);
      store.touchSession(sessionId).catch((err: unknown) => this.#d.logger.warn({ err }, 'recording an MCP session\'s use failed'));
    }
    return { session, connection };
  }

  async #initialize(ctx: RequestContext, server: McpServerConfig, message: JsonRpcMessage): Promise<GatewayResponse> {
    const id = message.id ?? null;
    const caller = this.caller(ctx);
    // A user's first session creates their connection.
    const connection = (await this.#d.store().connection(server, caller, true))!;
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session: null, timeoutMs });
    } catch (err) {
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, id, err);
      if (err instanceof TimedOut) return timeoutAnswer(ctx, id, timeoutMs);
      if (err instanceof GatewayError && err.code !== 'host_not_allowed') return upstreamFailure(ctx, id, `The MCP server "${server.name}" could not be reached: ${err.message}`, null);
      throw err;
    }
    const request: Forwarded = { id, method: 'initialize', tool: null, params: {} };
    if (upstream.status < 200 || upstream.status >= 300) {
      const text = await this.#errorText(upstream);
      // A server that speaks only 2026-07-28 refuses initialize (400, "unsupported protocol version"): its
      // server/discover says what initialize would have, and the session is the gateway's alone.
      if (refusesRevision(upstream.status)) {
        this.#eras.forget(server);
        const params = isObject(message.params) ? message.params : {};
        const envelope: Envelope = { capabilities: isObject(params.capabilities) ? params.capabilities : {}, clientInfo: isObject(params.clientInfo) ? params.clientInfo : null };
        const era = await this.#eras.of(ctx, server, connection, envelope, timeoutMs).catch(() => null);
        if (era?.modern) {
          const sessionId = await this.#openSession(connection, caller, null, envelope);
          const answer = jsonResponse(200, { jsonrpc: '2.0', id, result: initializeResult(params.protocolVersion, era.discover, server.name) });
          answer.headers['mcp-session-id'] = sessionId;
          return answer;
        }
      }
      return this.#errorAnswerFrom(ctx, server, request, upstream.status, text);
    }
    const upstreamSession = headerValue(upstream.headers['mcp-session-id']) ?? null;
    const sessionId = await this.#openSession(connection, caller, upstreamSession, null);
    const session: McpSession = { connectionId: connection.id, serverId: server.id, apiKeyId: caller.apiKeyId, upstreamSessionId: upstreamSession, envelope: null, lastUsedAt: this.#o.now() };
    const wire: Wire = { upstreamSessionId: upstreamSession, envelope: null, version: null };
    const answer = await this.#answer(ctx, server, connection, session, request, upstream, deadline, timeoutMs, { wire, translate: null, declineRequests: false, stream: 'answer' });
    answer.headers['mcp-session-id'] = sessionId;
    return answer;
  }

  /**
   * The ids a session client gets on an answer's stream, so it can reconnect (a `GET` with `Last-Event-ID`) when its
   * own connection drops: each is the upstream's last event id at that point and the request it answers, sealed and
   * bound to the session, so only that session can resume and nothing can be forged; the gateway resumes the
   * upstream's stream from there and judges the answer again ({@link #resumeForClient}). Undefined where there is
   * nothing to resume: a 2026-07-28 exchange (that revision has none), a subscription, `initialize`.
   */
  #clientEventIds(ctx: RequestContext, session: McpSession | null, request: Forwarded, via: Via): ((upstreamId: string) => string) | undefined {
    const sessionId = ctx.header('mcp-session-id');
    if (session === null || session.envelope !== null || via.wire.envelope !== null || via.stream !== 'answer' || request.method === 'initialize' || sessionId === undefined) return undefined;
    const store = this.#d.store();
    const purpose = clientEventPurpose(sessionId);
    return (upstreamId) => store.seal(JSON.stringify({ u: upstreamId, r: request.id, m: request.method, t: request.tool }), purpose);
  }

  /**
   * A session client reconnecting after an event of an answer's stream: the upstream's stream is reopened after the
   * event the id names (the upstream replays what came after, the answer among it), relayed as any answer is,
   * judged again, with ids again. Null when the id is not one this session was given.
   */
  async #resumeForClient(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, session: McpSession, sessionId: string, lastEventId: string): Promise<GatewayResponse | null> {
    let token: { u: string; r: JsonRpcId; m: string; t: string | null };
    try {
      token = JSON.parse(this.#d.store().open(lastEventId, clientEventPurpose(sessionId)));
    } catch {
      return null;
    }
    const request: Forwarded = { id: token.r, method: token.m, tool: token.t, params: token.t === null ? {} : { name: token.t } };
    ctx.logFields.rpc_method = token.m;
    if (token.t !== null) ctx.logFields.tool_name = token.t;
    const wire: Wire = { upstreamSessionId: session.upstreamSessionId, envelope: null, version: null };
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'GET', body: null, session: wire, timeoutMs, accept: 'text/event-stream', lastEventId: token.u });
    } catch (err) {
      return this.#callFailure(ctx, server, connection, wire, request.id, timeoutMs, err, false);
    }
    return this.#answer(ctx, server, connection, session, request, upstream, deadline, timeoutMs, { wire, translate: null, declineRequests: false, stream: 'answer' });
  }

  /** A new gateway session on the connection (its id, returned, is the client's alone to hold). */
  async #openSession(connection: McpConnection, caller: McpCaller, upstreamSessionId: string | null, envelope: Envelope | null): Promise<string> {
    const sessionId = randomBytes(32).toString('base64url');
    await this.#d.store().createSession(sessionId, connection, caller.apiKeyId, upstreamSessionId, envelope);
    this.#touched.set(sessionId, this.#o.now());
    return sessionId;
  }

  /**
   * What the client gets for a forwarded request: the upstream's answer, judged. `via` says how it went (the wire),
   * how an answer is put in the client's revision (`translate`), whether the server's own requests on the stream
   * are refused upstream instead of relayed (a stateless client cannot be asked them), and whether the stream is
   * a 2026-07-28 subscription (relayed for as long as it lasts, without the request's deadline).
   */
  async #answer(
    ctx: RequestContext,
    server: McpServerConfig,
    connection: McpConnection,
    session: McpSession | null,
    request: Forwarded,
    upstream: UpstreamResponse,
    deadline: number,
    timeoutMs: number,
    via: Via,
  ): Promise<GatewayResponse> {
    if (upstream.status === 404 && session !== null && session.upstreamSessionId !== null && request.method !== 'initialize') {
      upstream.body.discard();
      return this.#sessionGone(ctx, session);
    }
    if (upstream.status < 200 || upstream.status >= 300) return this.#errorAnswer(ctx, server, request, upstream);
    const translate = via.translate ?? ((m: RelayedMessage) => m);
    const onAnswer = (message: RelayedMessage) => judgeAnswer(ctx, server, request, translate(message), this.#d.guardrails());
    const { wire } = via;
    if (isEventStream(upstream)) {
      ctx.stream = true;
      const listen = via.stream === 'listen';
      const events = upstream.body.readable();
      // A subscription lasts: it is closed with its connection's revocation.
      if (listen) this.#streams.track(connectionStreams(connection), events);
      const stream = relayEvents(events, {
        isAnswer: (m) => m.id === request.id && ('result' in m || 'error' in m),
        onMessage: (m, answer) => {
          if (answer) return onAnswer(m);
          if (via.declineRequests && typeof m.method === 'string' && 'id' in m) {
            this.#upstream.decline(server, connection, wire, m.id as JsonRpcId);
            return null;
          }
          return m;
        },
        deadline: listen ? null : deadline,
        maxEventBytes: this.#o.maxAnswerBytes,
        eventId: this.#clientEventIds(ctx, session, request, via),
        // The stream closed before the answer (SSE polling, a dropped connection): reopened after its last event, not
        // sent again. 2026-07-28 has no resumption (a stateless request is simply asked again).
        resume:
          wire.envelope !== null || listen
            ? undefined
            : async (lastEventId) => {
                const again = await this.#upstream.call(ctx, server, connection, {
                  method: 'GET',
                  body: null,
                  session: wire,
                  timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
                  accept: 'text/event-stream',
                  lastEventId,
                  ...(wire.version === null ? {} : { headers: { 'mcp-protocol-version': wire.version } }),
                });
                if (again.status !== 200 || !isEventStream(again)) {
                  again.body.discard();
                  return null;
                }
                return again.body.readable();
              },
        onFailure: (kind) => {
          if (listen) return null; // a subscription that ends without its closing result is the server going away
          if (kind === 'oversized') {
            ctx.error = mcpError('mcp_upstream_error', `The MCP server "${server.name}" sent an event larger than ${this.#o.maxAnswerBytes} bytes; the stream was closed.`);
            return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
          }
          if (kind === 'timeout') {
            this.#upstream.cancel(ctx, server, connection, wire, request.id, timeoutMs);
            ctx.error = timeoutError(timeoutMs);
            return jsonRpcErrorBody(request.id, { code: MCP_CODES.REQUEST_TIMEOUT, message: ctx.error.message, data: { timeout_ms: timeoutMs } });
          }
          ctx.error = mcpError('mcp_upstream_error', `The MCP server "${server.name}" ended its stream without answering.`);
          return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
        },
      });
      return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: stream, observers: null };
    }
    const text = await readWithin(upstream.body, this.#o.maxAnswerBytes, deadline);
    if (text === TIMED_OUT) {
      this.#upstream.cancel(ctx, server, connection, wire, request.id, timeoutMs);
      return timeoutAnswer(ctx, request.id, timeoutMs);
    }
    if (text instanceof GatewayError) return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" sent an answer that could not be read: ${text.message}`, upstream.status);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" answered with a body that is not JSON.`, upstream.status);
    }
    if (!isObject(message) || message.id !== request.id || !('result' in message || 'error' in message)) {
      return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" answered with something other than the answer to this request.`, upstream.status);
    }
    return jsonResponse(200, await onAnswer(message));
  }

  /** An upstream answer that is not 2xx: its JSON-RPC error when it sent one (so the client gets a clean error), else -32603. */
  async #errorAnswer(ctx: RequestContext, server: McpServerConfig, request: Forwarded, upstream: UpstreamResponse): Promise<GatewayResponse> {
    return this.#errorAnswerFrom(ctx, server, request, upstream.status, await this.#errorText(upstream));
  }

  /** What an error answer says (the first ERROR_BODY_BYTES of it). */
  async #errorText(upstream: UpstreamResponse): Promise<string> {
    const text = await readWithin(upstream.body, ERROR_BODY_BYTES, performance.now() + 5000).catch(() => '');
    return typeof text === 'string' ? text : '';
  }

  #errorAnswerFrom(ctx: RequestContext, server: McpServerConfig, request: Forwarded, status: number, text: string): GatewayResponse {
    const upstream = { status };
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON: the status says what happened */
    }
    if (isObject(body) && isObject(body.error) && typeof body.error.code === 'number' && typeof body.error.message === 'string') {
      ctx.error = mcpError('mcp_upstream_error', `The MCP server "${server.name}" answered HTTP ${upstream.status}: ${body.error.message.slice(0, 500)}`);
      // A refusal of the request (4xx) keeps its status, as the server sent it; a server's own failure is the JSON-RPC error alone.
      const status = upstream.status >= 400 && upstream.status < 500 ? upstream.status : 200;
      return jsonResponse(status, jsonRpcErrorBody(request.id, { code: body.error.code, message: body.error.message, ...(body.error.data === undefined ? {} : { data: body.error.data }) }));
    }
    return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" failed: it answered HTTP ${upstream.status}.`, upstream.status);
  }

  /** What a notification or a client's answer gets: the upstream's acknowledgement (202), or its error. */
  #acknowledgement(ctx: RequestContext, upstream: UpstreamResponse, session: McpSession | null): GatewayResponse | Promise<GatewayResponse> {
    upstream.body.discard();
    if (upstream.status === 404 && session !== null && session.upstreamSessionId !== null) return this.#sessionGone(ctx, session);
    if (upstream.status >= 200 && upstream.status < 300) return accepted();
    ctx.error = mcpError('mcp_upstream_error', `The MCP server answered HTTP ${upstream.status}.`);
    return jsonResponse(502, jsonRpcErrorBody(null, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message, data: { upstream_status: upstream.status } }));
  }

  /** The upstream no longer knows the session (it restarted): ours ends too, and the client initializes again (HTTP 404). */
  async #sessionGone(ctx: RequestContext, _session: McpSession): Promise<GatewayResponse> {
    const sessionId = ctx.header('mcp-session-id');
    if (sessionId !== undefined) {
      await this.#d.store().deleteSession(sessionId);
      this.#streams.close(sessionId);
    }
    throw mcpError('mcp_session_not_found', 'Session not found: the MCP server ended it; send initialize to open a new one.', { param: 'mcp-session-id' });
  }

  #authorizationAnswer(ctx: RequestContext, id: JsonRpcId, err: AuthorizationRequired): GatewayResponse {
    ctx.error = mcpError('mcp_authorization_required', err.message);
    const elicitation = { mode: 'url', elicitationId: randomBytes(12).toString('base64url'), url: err.url, message: err.message };
    return rpcAnswer(id, MCP_CODES.URL_ELICITATION_REQUIRED, err.message, { elicitations: [elicitation], authorization_url: err.url, expires_at: new Date(err.expiresAt).toISOString() });
  }
}

/** What the gateway's client event ids are sealed for: the session's own (another session cannot open them). */
const clientEventPurpose = (sessionId: string) => `event-id:${sessionDigest(sessionId)}`;

/** What acknowledges a message with nothing to answer (a notification, a client's answer). */
const accepted = (): GatewayResponse => ({ status: 202, headers: {}, body: null, observers: null });

/** The notifications of a stateless client that go upstream; the others (of a revision the upstream does not speak) are acknowledged here. */
const NOTIFICATIONS_FORWARDED: ReadonlySet<string> = new Set(['notifications/cancelled', 'notifications/progress']);

/** How a forwarded request's answer is handled (see McpGateway's #answer). */
interface Via {
  wire: Wire;
  translate: ((message: RelayedMessage) => RelayedMessage) | null;
  declineRequests: boolean;
  /** `listen`: a 2026-07-28 subscription, relayed until it ends. */
  stream: 'answer' | 'listen';
}

/** The key a stateless client's open subscriptions are tracked under (its connection's). */
const CONNECTION_STREAMS = 'connection:';
const connectionStreams = (connection: McpConnection) => `${CONNECTION_STREAMS}${connection.id}`;

/** A 2026-07-28 question a session client cannot be asked: the answer says so, and how to connect instead. */
function inputUnavailable(message: RelayedMessage, serverName: string): RelayedMessage {
  return jsonRpcErrorBody((message.id ?? null) as JsonRpcId, {
    code: JSONRPC.INTERNAL_ERROR,
    message: `The MCP server "${serverName}" asks the client for input (MCP ${MODERN_VERSION}'s input_required), which a session of an earlier revision cannot answer through the gateway; connect with ${MODERN_VERSION}.`,
  }) as RelayedMessage;
}
