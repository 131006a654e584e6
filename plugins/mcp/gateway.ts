import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
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
import { relayEvents, type RelayedMessage } from './events.js';
import { checkToolCall, judgeAnswer, type Forwarded } from './judge.js';
import { AuthorizationRequired, type OAuthFlow } from './oauth.js';
import type { McpCaller, McpConnection, McpServerConfig, McpServerStore, McpSession, McpSessionToEnd } from './store/types.js';
import { SessionStreams } from './streams.js';
import { McpUpstream } from './upstream.js';
import { mcpError } from './errors.js';

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

  constructor(options: GatewayOptions, deps: GatewayDeps) {
    this.#o = options;
    this.#d = deps;
    this.#upstream = new McpUpstream({ upstream: deps.upstream, oauth: deps.oauth, logger: deps.logger, caller: (ctx) => this.caller(ctx), redirectUri: (ctx) => this.redirectUri(ctx) });
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
    if (kind === 'request' && message.method === 'initialize') return this.#initialize(ctx, server, message);

    const { session, connection } = await this.#session(ctx, server);
    if (kind !== 'request') {
      // Notifications and the client's answers (to sampling, elicitation) pass as they are; the upstream acknowledges them.
      const upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs: this.#timeout(server) });
      return this.#acknowledgement(ctx, upstream, session);
    }

    const request: Forwarded = { id: message.id ?? null, method: message.method!, tool: null, params: isObject(message.params) ? message.params : {} };
    if (request.method === 'tools/call') {
      const refused = await checkToolCall(ctx, server, request, this.#d.guardrails());
      if (refused !== null) return refused;
    }
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs });
    } catch (err) {
      if (err instanceof TimedOut) {
        this.#upstream.cancel(ctx, server, connection, session, request.id, timeoutMs);
        return timeoutAnswer(ctx, request.id, timeoutMs);
      }
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, request.id, err);
      if (err instanceof GatewayError && err.code !== 'host_not_allowed') return upstreamFailure(ctx, request.id, `The MCP server "${server.name}" could not be reached: ${err.message}`, null);
      throw err;
    }
    return this.#answer(ctx, server, connection, session, request, upstream, deadline, timeoutMs);
  }

  // GET /v1/mcp/{id}: the stream of the server's own messages (requests, notifications) for a session.
  async get(ctx: RequestContext): Promise<GatewayResponse> {
    const server = await this.#server(ctx);
    const { session, connection } = await this.#session(ctx, server);
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
    for (const s of sessions) {
      this.#streams.closeByDigest(s.sessionId);
      if (s.upstreamSessionId !== null) void this.#upstream.end(server, connection, s.upstreamSessionId);
    }
  }

  /** Closes this instance's streams whose sessions ended elsewhere (revoked on another instance, expired). */
  async sweepStreams(): Promise<void> {
    if (this.#streams.size === 0) return;
    const ids = this.#streams.sessionIds();
    const live = await this.#d.store().liveSessions(ids);
    for (const id of ids) if (!live.has(id)) this.#streams.close(id);
  }

  /** Deletes sessions idle longer than the timeout. */
  async sweepSessions(): Promise<number> {
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
    if (upstream.status < 200 || upstream.status >= 300) return this.#errorAnswer(ctx, server, { id, method: 'initialize', tool: null, params: {} }, upstream);
    const upstreamSession = headerValue(upstream.headers['mcp-session-id']);
    const sessionId = randomBytes(32).toString('base64url');
    await this.#d.store().createSession(sessionId, connection, caller.apiKeyId, upstreamSession ?? null);
    this.#touched.set(sessionId, this.#o.now());
    const session: McpSession = { connectionId: connection.id, serverId: server.id, apiKeyId: caller.apiKeyId, upstreamSessionId: upstreamSession ?? null, lastUsedAt: this.#o.now() };
    const answer = await this.#answer(ctx, server, connection, session, { id, method: 'initialize', tool: null, params: {} }, upstream, deadline, timeoutMs);
    answer.headers['mcp-session-id'] = sessionId;
    return answer;
  }

  /** What the client gets for a forwarded request: the upstream's answer, judged. */
  async #answer(
    ctx: RequestContext,
    server: McpServerConfig,
    connection: McpConnection,
    session: McpSession,
    request: Forwarded,
    upstream: UpstreamResponse,
    deadline: number,
    timeoutMs: number,
  ): Promise<GatewayResponse> {
    if (upstream.status === 404 && session.upstreamSessionId !== null && request.method !== 'initialize') {
      upstream.body.discard();
      return this.#sessionGone(ctx, session);
    }
    if (upstream.status < 200 || upstream.status >= 300) return this.#errorAnswer(ctx, server, request, upstream);
    const onAnswer = (message: RelayedMessage) => judgeAnswer(ctx, server, request, message, this.#d.guardrails());
    if (isEventStream(upstream)) {
      ctx.stream = true;
      const stream = relayEvents(upstream.body.readable(), {
        isAnswer: (m) => m.id === request.id && ('result' in m || 'error' in m),
        onMessage: (m, answer) => (answer ? onAnswer(m) : m),
        deadline,
        maxEventBytes: this.#o.maxAnswerBytes,
        // The stream closed before the answer (SSE polling, a dropped connection): reopened after its last event, not sent again.
        resume: async (lastEventId) => {
          const again = await this.#upstream.call(ctx, server, connection, { method: 'GET', body: null, session, timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())), accept: 'text/event-stream', lastEventId });
          if (again.status !== 200 || !isEventStream(again)) {
            again.body.discard();
            return null;
          }
          return again.body.readable();
        },
        onFailure: (kind) => {
          if (kind === 'oversized') {
            ctx.error = mcpError('mcp_upstream_error', `The MCP server "${server.name}" sent an event larger than ${this.#o.maxAnswerBytes} bytes; the stream was closed.`);
            return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
          }
          if (kind === 'timeout') {
            this.#upstream.cancel(ctx, server, connection, session, request.id, timeoutMs);
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
      this.#upstream.cancel(ctx, server, connection, session, request.id, timeoutMs);
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
    const text = await readWithin(upstream.body, ERROR_BODY_BYTES, performance.now() + 5000).catch(() => '');
    let body: unknown = null;
    if (typeof text === 'string') {
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON: the status says what happened */
      }
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
  #acknowledgement(ctx: RequestContext, upstream: UpstreamResponse, session: McpSession): GatewayResponse | Promise<GatewayResponse> {
    upstream.body.discard();
    if (upstream.status === 404 && session.upstreamSessionId !== null) return this.#sessionGone(ctx, session);
    if (upstream.status >= 200 && upstream.status < 300) return { status: 202, headers: {}, body: null, observers: null };
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
