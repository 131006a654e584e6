import { hash, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import {
  GatewayError,
  type GatewayResponse,
  type GuardrailRunner,
  JSONRPC,
  JsonRpcError,
  jsonRpcErrorBody,
  type JsonRpcId,
  type JsonRpcMessage,
  jsonResponse,
  type Logger,
  readJsonRpc,
  readText,
  type RequestContext,
  setJsonRpcId,
  type UpstreamClient,
  type UpstreamResponse,
} from '../../sdk/index.js';
import type { McpCaller, McpConnection, McpServerConfig, McpServerStore, McpSession, McpSessionToEnd } from './store/types.js';
import { relayEvents, type RelayedMessage } from './events.js';
import { AuthorizationRequired, type OAuthFlow } from './oauth.js';

/** JSON-RPC codes MCP (and its SDK) give meaning to beyond JSON-RPC's own. */
export const MCP_CODES = Object.freeze({
  /** The MCP SDK's `RequestTimeout`: clients report it as a timed-out request. */
  REQUEST_TIMEOUT: -32001,
  /** MCP's `URLElicitationRequired`: the user must open a URL (here: to authorize the gateway) and try again. */
  URL_ELICITATION_REQUIRED: -32042,
});

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
/** Ending an upstream session is a courtesy with a short leash. */
const END_SESSION_TIMEOUT_MS = 5_000;
/** What an upstream's error answer is read of, to find a JSON-RPC error in it. */
const ERROR_BODY_BYTES = 64 * 1024;
/** The route name a guardrail check sees for a tool call. */
const TOOL_CALL_ROUTE = 'mcp.tools.call';

/** A request the gateway forwards, with what it needs to judge the answer. */
interface Forwarded {
  id: JsonRpcId;
  method: string;
  /** `tools/call`: the tool's name. */
  tool: string | null;
  params: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

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
  /** The upstream side of open GET streams on this instance, by session id: destroyed when their session ends. */
  readonly #streams = new Map<string, Set<Readable>>();

  constructor(options: GatewayOptions, deps: GatewayDeps) {
    this.#o = options;
    this.#d = deps;
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
      ctx.error = new GatewayError('mcp_invalid_message', err.message);
      return jsonResponse(err.status, jsonRpcErrorBody(null, { code: err.code, message: err.message }));
    }
    setJsonRpcId(ctx, message.id);
    if (kind !== 'response') ctx.logFields.rpc_method = message.method;
    if (kind === 'request' && message.method === 'initialize') return this.#initialize(ctx, server, message);

    const { session, connection } = await this.#session(ctx, server);
    if (kind !== 'request') {
      // Notifications and the client's answers (to sampling, elicitation) pass as they are; the upstream acknowledges them.
      const upstream = await this.#call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs: this.#timeout(server) });
      return this.#acknowledgement(ctx, upstream, session);
    }

    const request: Forwarded = { id: message.id ?? null, method: message.method!, tool: null, params: isObject(message.params) ? message.params : {} };
    if (request.method === 'tools/call') {
      const refused = await this.#checkToolCall(ctx, server, request);
      if (refused !== null) return refused;
    }
    const timeoutMs = this.#timeout(server);
    const deadline = performance.now() + timeoutMs;
    let upstream: UpstreamResponse;
    try {
      upstream = await this.#call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session, timeoutMs });
    } catch (err) {
      if (err instanceof TimedOut) {
        this.#cancelUpstream(ctx, server, connection, session, request.id, timeoutMs);
        return this.#timeoutAnswer(ctx, request.id, timeoutMs);
      }
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, request.id, err);
      if (err instanceof GatewayError && err.code !== 'host_not_allowed') return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" could not be reached: ${err.message}`, null);
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
      upstream = await this.#call(ctx, server, connection, { method: 'GET', body: null, session, timeoutMs: this.#timeout(server), accept: 'text/event-stream' });
    } catch (err) {
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, null, err);
      if (err instanceof TimedOut) return this.#timeoutAnswer(ctx, null, this.#timeout(server), 504);
      throw err;
    }
    if (!isEventStream(upstream)) {
      // 405: the server offers no such stream, which clients expect and handle.
      upstream.body.resume();
      if (upstream.status === 404 && session.upstreamSessionId !== null) return this.#sessionGone(ctx, session);
      return { status: upstream.status >= 400 ? upstream.status : 502, headers: {}, body: null, observers: null };
    }
    ctx.stream = true;
    const sessionId = ctx.header('mcp-session-id')!;
    const stream = relayEvents(upstream.body, {
      isAnswer: () => false,
      // Answers belong on the stream of the request they answer; one here would be a replay past the checks.
      onMessage: (m) => ('method' in m ? m : null),
      deadline: null,
      onFailure: () => null,
      maxEventBytes: this.#o.maxAnswerBytes,
    });
    // Tracked by its upstream side: destroying that ends the relay cleanly (the client's response ends; a destroyed
    // relay would leave it open).
    this.#track(sessionId, upstream.body);
    return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: stream, observers: null };
  }

  // DELETE /v1/mcp/{id}: the client ends its session.
  async delete(ctx: RequestContext): Promise<GatewayResponse> {
    const server = await this.#server(ctx);
    const { session, connection } = await this.#session(ctx, server);
    const sessionId = ctx.header('mcp-session-id')!;
    await this.#d.store().deleteSession(sessionId);
    this.#closeStreams(sessionId);
    if (session.upstreamSessionId !== null) await this.#endUpstream(server, connection, session.upstreamSessionId);
    return { status: 200, headers: {}, body: null, observers: null };
  }

  /** Ends sessions for the control plane (a revoked connection, an archived server): upstream and on this instance. */
  closeSessions(server: McpServerConfig, connection: McpConnection, sessions: readonly McpSessionToEnd[]): void {
    for (const s of sessions) {
      this.#closeStreamsByDigest(s.sessionId);
      if (s.upstreamSessionId !== null) void this.#endUpstream(server, connection, s.upstreamSessionId);
    }
  }

  /** Closes this instance's streams whose sessions ended elsewhere (revoked on another instance, expired). */
  async sweepStreams(): Promise<void> {
    if (this.#streams.size === 0) return;
    const ids = [...this.#streams.keys()];
    const live = await this.#d.store().liveSessions(ids);
    for (const id of ids) if (!live.has(id)) this.#closeStreams(id);
  }

  /** Deletes sessions idle longer than the timeout. */
  async sweepSessions(): Promise<number> {
    return this.#d.store().deleteIdleSessions(this.#o.now() - this.#o.sessionIdleTimeoutMs);
  }

  /** Closes every stream (the gateway is closing). */
  closeAll(): void {
    for (const id of [...this.#streams.keys()]) this.#closeStreams(id);
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
      throw new GatewayError('mcp_session_required', 'Bad request: an mcp-session-id header is required; send initialize first to open a session.', { param: 'mcp-session-id' });
    }
    const store = this.#d.store();
    const gone = () => new GatewayError('mcp_session_not_found', 'Session not found: it ended, expired or was revoked; send initialize to open a new one.', { param: 'mcp-session-id' });
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
      upstream = await this.#call(ctx, server, connection, { method: 'POST', body: ctx.rawBody, session: null, timeoutMs });
    } catch (err) {
      if (err instanceof AuthorizationRequired) return this.#authorizationAnswer(ctx, id, err);
      if (err instanceof TimedOut) return this.#timeoutAnswer(ctx, id, timeoutMs);
      if (err instanceof GatewayError && err.code !== 'host_not_allowed') return this.#upstreamFailure(ctx, id, `The MCP server "${server.name}" could not be reached: ${err.message}`, null);
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

  /** The allow-list and the input guardrails of a tool call; a refusal is the answer, null lets it go on. */
  async #checkToolCall(ctx: RequestContext, server: McpServerConfig, request: Forwarded): Promise<GatewayResponse | null> {
    const name = request.params.name;
    if (typeof name !== 'string' || name === '') {
      ctx.error = new GatewayError('mcp_invalid_message', 'tools/call needs params.name, the tool to call.');
      return rpcAnswer(request.id, JSONRPC.INVALID_PARAMS, 'Invalid params: tools/call needs params.name, the tool to call.');
    }
    request.tool = name;
    ctx.logFields.tool_name = name;
    if (server.allowedTools !== null && !server.allowedTools.has(name)) {
      // Worded as MCP servers word an unknown tool: whether it exists upstream is not the caller's to learn.
      const text = `Unknown tool: "${name.slice(0, 128)}" is not available through this gateway.`;
      ctx.error = new GatewayError('mcp_tool_not_allowed', text);
      return rpcAnswer(request.id, JSONRPC.INVALID_PARAMS, text);
    }
    const lists = server.guardrails;
    if (lists?.input_guardrails === undefined || lists.input_guardrails.length === 0) return null;
    const runner = this.#d.guardrails();
    if (runner === undefined) return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" has guardrails, and this gateway does not load the guardrails plugin: the call is refused.`, null, 'mcp_guardrails_unavailable');
    const args = request.params.arguments;
    const verdict = await runner.run(ctx, lists, 'input', { text: argumentText(args), request: { name, arguments: isObject(args) ? args : {} }, response: null, route: TOOL_CALL_ROUTE });
    ctx.logFields.hook_results = { before_request_hooks: verdict.results, after_request_hooks: [] };
    if (!verdict.denied) return null;
    ctx.error = new GatewayError(verdict.error!.code, verdict.error!.message);
    return rpcAnswer(request.id, JSONRPC.SERVER_ERROR, verdict.error!.message, denialData(ctx, verdict.error!.code));
  }

  /** Output guardrails on a tool's result: the result, or the denial that replaces it. */
  async #checkResult(ctx: RequestContext, server: McpServerConfig, request: Forwarded, answer: RelayedMessage): Promise<RelayedMessage> {
    const lists = server.guardrails;
    if (lists?.output_guardrails === undefined || lists.output_guardrails.length === 0 || !isObject(answer.result)) return answer;
    const runner = this.#d.guardrails();
    if (runner === undefined) {
      ctx.error = new GatewayError('mcp_guardrails_unavailable', `The MCP server "${server.name}" has guardrails, and this gateway does not load the guardrails plugin: the result is withheld.`);
      return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
    }
    const result = answer.result;
    const verdict = await runner.run(ctx, lists, 'output', { text: resultText(result), request: { name: request.tool, arguments: request.params.arguments ?? {} }, response: result, route: TOOL_CALL_ROUTE });
    const before = (ctx.logFields.hook_results as { before_request_hooks?: unknown[] } | undefined)?.before_request_hooks ?? [];
    ctx.logFields.hook_results = { before_request_hooks: before, after_request_hooks: verdict.results };
    if (!verdict.denied) return answer;
    ctx.error = new GatewayError(verdict.error!.code, verdict.error!.message);
    return jsonRpcErrorBody(request.id, { code: JSONRPC.SERVER_ERROR, message: verdict.error!.message, data: denialData(ctx, verdict.error!.code) });
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
      upstream.body.resume();
      return this.#sessionGone(ctx, session);
    }
    if (upstream.status < 200 || upstream.status >= 300) return this.#errorAnswer(ctx, server, request, upstream);
    const onAnswer = (message: RelayedMessage) => this.#judge(ctx, server, request, message);
    if (isEventStream(upstream)) {
      ctx.stream = true;
      const stream = relayEvents(upstream.body, {
        isAnswer: (m) => m.id === request.id && ('result' in m || 'error' in m),
        onMessage: (m, answer) => (answer ? onAnswer(m) : m),
        deadline,
        maxEventBytes: this.#o.maxAnswerBytes,
        onFailure: (kind) => {
          if (kind === 'oversized') {
            ctx.error = new GatewayError('mcp_upstream_error', `The MCP server "${server.name}" sent an event larger than ${this.#o.maxAnswerBytes} bytes; the stream was closed.`);
            return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
          }
          if (kind === 'timeout') {
            this.#cancelUpstream(ctx, server, connection, session, request.id, timeoutMs);
            ctx.error = timeoutError(timeoutMs);
            return jsonRpcErrorBody(request.id, { code: MCP_CODES.REQUEST_TIMEOUT, message: ctx.error.message, data: { timeout_ms: timeoutMs } });
          }
          ctx.error = new GatewayError('mcp_upstream_error', `The MCP server "${server.name}" ended its stream without answering.`);
          return jsonRpcErrorBody(request.id, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message });
        },
      });
      return { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: stream, observers: null };
    }
    const text = await readWithin(upstream.body, this.#o.maxAnswerBytes, deadline);
    if (text === TIMED_OUT) {
      this.#cancelUpstream(ctx, server, connection, session, request.id, timeoutMs);
      return this.#timeoutAnswer(ctx, request.id, timeoutMs);
    }
    if (text instanceof GatewayError) return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" sent an answer that could not be read: ${text.message}`, upstream.status);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" answered with a body that is not JSON.`, upstream.status);
    }
    if (!isObject(message) || message.id !== request.id || !('result' in message || 'error' in message)) {
      return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" answered with something other than the answer to this request.`, upstream.status);
    }
    return jsonResponse(200, await onAnswer(message));
  }

  /** The answer, before it goes out: allow-list filtering, output guardrails, and what the log records. */
  async #judge(ctx: RequestContext, server: McpServerConfig, request: Forwarded, answer: RelayedMessage): Promise<RelayedMessage> {
    if (request.method === 'tools/list' && server.allowedTools !== null && isObject(answer.result) && Array.isArray(answer.result.tools)) {
      const allowed = server.allowedTools;
      return { ...answer, result: { ...answer.result, tools: answer.result.tools.filter((t: unknown) => isObject(t) && typeof t.name === 'string' && allowed.has(t.name)) } };
    }
    if (request.method !== 'tools/call') {
      if (isObject(answer.error)) ctx.error = new GatewayError('mcp_upstream_error', `The MCP server answered ${request.method} with an error: ${String(answer.error.message ?? '').slice(0, 500)}`);
      return answer;
    }
    if (isObject(answer.error)) {
      ctx.error = new GatewayError('mcp_tool_error', `The MCP server refused the call of "${request.tool}": ${String(answer.error.message ?? '').slice(0, 500)}`);
      return answer;
    }
    if (isObject(answer.result) && answer.result.isError === true) {
      ctx.error = new GatewayError('mcp_tool_error', `The tool "${request.tool}" reported an error: ${resultText(answer.result).slice(0, 500)}`);
    }
    return this.#checkResult(ctx, server, request, answer);
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
      ctx.error = new GatewayError('mcp_upstream_error', `The MCP server "${server.name}" answered HTTP ${upstream.status}: ${body.error.message.slice(0, 500)}`);
      return jsonResponse(200, jsonRpcErrorBody(request.id, { code: body.error.code, message: body.error.message, ...(body.error.data === undefined ? {} : { data: body.error.data }) }));
    }
    return this.#upstreamFailure(ctx, request.id, `The MCP server "${server.name}" failed: it answered HTTP ${upstream.status}.`, upstream.status);
  }

  /** What a notification or a client's answer gets: the upstream's acknowledgement (202), or its error. */
  #acknowledgement(ctx: RequestContext, upstream: UpstreamResponse, session: McpSession): GatewayResponse | Promise<GatewayResponse> {
    upstream.body.resume();
    if (upstream.status === 404 && session.upstreamSessionId !== null) return this.#sessionGone(ctx, session);
    if (upstream.status >= 200 && upstream.status < 300) return { status: 202, headers: {}, body: null, observers: null };
    ctx.error = new GatewayError('mcp_upstream_error', `The MCP server answered HTTP ${upstream.status}.`);
    return jsonResponse(502, jsonRpcErrorBody(null, { code: JSONRPC.INTERNAL_ERROR, message: ctx.error.message, data: { upstream_status: upstream.status } }));
  }

  /** The upstream no longer knows the session (it restarted): ours ends too, and the client initializes again (HTTP 404). */
  async #sessionGone(ctx: RequestContext, _session: McpSession): Promise<GatewayResponse> {
    const sessionId = ctx.header('mcp-session-id');
    if (sessionId !== undefined) {
      await this.#d.store().deleteSession(sessionId);
      this.#closeStreams(sessionId);
    }
    throw new GatewayError('mcp_session_not_found', 'Session not found: the MCP server ended it; send initialize to open a new one.', { param: 'mcp-session-id' });
  }

  #upstreamFailure(ctx: RequestContext, id: JsonRpcId, message: string, upstreamStatus: number | null, code = 'mcp_upstream_error'): GatewayResponse {
    ctx.error = new GatewayError(code, message);
    return rpcAnswer(id, JSONRPC.INTERNAL_ERROR, message, upstreamStatus === null ? undefined : { upstream_status: upstreamStatus });
  }

  #timeoutAnswer(ctx: RequestContext, id: JsonRpcId, timeoutMs: number, status = 200): GatewayResponse {
    ctx.error = timeoutError(timeoutMs);
    return jsonResponse(status, jsonRpcErrorBody(id, { code: MCP_CODES.REQUEST_TIMEOUT, message: ctx.error.message, data: { timeout_ms: timeoutMs } }));
  }

  #authorizationAnswer(ctx: RequestContext, id: JsonRpcId, err: AuthorizationRequired): GatewayResponse {
    ctx.error = new GatewayError('mcp_authorization_required', err.message);
    const elicitation = { mode: 'url', elicitationId: randomBytes(12).toString('base64url'), url: err.url, message: err.message };
    return rpcAnswer(id, MCP_CODES.URL_ELICITATION_REQUIRED, err.message, { elicitations: [elicitation], authorization_url: err.url, expires_at: new Date(err.expiresAt).toISOString() });
  }

  /**
   * One call to the upstream, with the server's auth: a static header, or
   * the user's OAuth token (refreshed when due, once more after a 401; with
   * none usable, {@link AuthorizationRequired}). Waits at most `timeoutMs`
   * for the answer's headers ({@link TimedOut}).
   */
  async #call(
    ctx: RequestContext,
    server: McpServerConfig,
    connection: McpConnection,
    call: { method: 'POST' | 'GET'; body: Buffer | null; session: McpSession | null; timeoutMs: number; accept?: string },
  ): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { accept: call.accept ?? 'application/json, text/event-stream' };
    if (call.body !== null) headers['content-type'] = 'application/json';
    const version = ctx.header('mcp-protocol-version');
    if (version !== undefined && version.length <= 64) headers['mcp-protocol-version'] = version;
    if (call.session?.upstreamSessionId) headers['mcp-session-id'] = call.session.upstreamSessionId;
    if (ctx.upstreamHeaders !== null) Object.assign(headers, ctx.upstreamHeaders);
    const auth = server.auth;
    if (auth.type === 'header') headers[auth.name] = auth.value;
    let token: string | null = null;
    if (auth.type === 'oauth') {
      token = await this.#d.oauth.accessToken(server, connection);
      if (token === null) throw await this.#authorizationRequired(ctx, server);
      headers.authorization = `Bearer ${token}`;
    }
    let upstream = await this.#send(ctx, server, headers, call);
    if (upstream.status === 401 && auth.type === 'oauth') {
      upstream.body.resume();
      token = await this.#d.oauth.accessToken(server, connection, true);
      if (token === null) throw await this.#authorizationRequired(ctx, server);
      headers.authorization = `Bearer ${token}`;
      upstream = await this.#send(ctx, server, headers, call);
      if (upstream.status === 401) {
        upstream.body.resume();
        await this.#d.oauth.forget(connection);
        throw await this.#authorizationRequired(ctx, server);
      }
    }
    return upstream;
  }

  async #send(ctx: RequestContext, server: McpServerConfig, headers: Record<string, string>, call: { method: 'POST' | 'GET'; body: Buffer | null; timeoutMs: number }): Promise<UpstreamResponse> {
    // The timeout covers the wait for headers; the answer's body has its own deadline (see #answer), and a GET stream none.
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

  async #authorizationRequired(ctx: RequestContext, server: McpServerConfig): Promise<AuthorizationRequired> {
    const { url, expiresAt } = await this.#d.oauth.authorizationUrl(server, this.caller(ctx), this.redirectUri(ctx));
    return new AuthorizationRequired(url, expiresAt, server.name);
  }

  /** Tells the upstream the gateway gave up on a request (MCP's notifications/cancelled), in the background. */
  #cancelUpstream(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, session: McpSession, id: JsonRpcId, timeoutMs: number): void {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: `The gateway's timeout of ${timeoutMs} ms passed.` } }));
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const version = ctx.header('mcp-protocol-version');
    if (version !== undefined && version.length <= 64) headers['mcp-protocol-version'] = version;
    if (session.upstreamSessionId !== null) headers['mcp-session-id'] = session.upstreamSessionId;
    if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
    if (server.auth.type === 'oauth' && connection.tokens !== null) headers.authorization = `Bearer ${connection.tokens.access_token}`;
    this.#d.upstream
      .send({ method: 'POST', url: server.url, headers, body }, AbortSignal.timeout(END_SESSION_TIMEOUT_MS), END_SESSION_TIMEOUT_MS)
      .then((r) => r.body.resume())
      .catch((err: unknown) => this.#d.logger.debug({ err, mcp_server_id: server.id }, 'telling an MCP server of a cancelled request failed'));
  }

  /** Ends an upstream session (DELETE with its id), best effort. */
  async #endUpstream(server: McpServerConfig, connection: McpConnection, upstreamSessionId: string): Promise<void> {
    const headers: Record<string, string> = { 'mcp-session-id': upstreamSessionId };
    if (server.auth.type === 'header') headers[server.auth.name] = server.auth.value;
    if (server.auth.type === 'oauth' && connection.tokens !== null) headers.authorization = `Bearer ${connection.tokens.access_token}`;
    try {
      const r = await this.#d.upstream.send({ method: 'DELETE', url: server.url, headers, body: null }, AbortSignal.timeout(END_SESSION_TIMEOUT_MS), END_SESSION_TIMEOUT_MS);
      r.body.resume();
    } catch (err) {
      this.#d.logger.debug({ err, mcp_server_id: server.id }, 'ending an upstream MCP session failed');
    }
  }

  #track(sessionId: string, stream: Readable): void {
    let set = this.#streams.get(sessionId);
    if (set === undefined) this.#streams.set(sessionId, (set = new Set()));
    set.add(stream);
    stream.once('close', () => {
      set.delete(stream);
      if (set.size === 0 && this.#streams.get(sessionId) === set) this.#streams.delete(sessionId);
    });
  }

  #closeStreams(sessionId: string): void {
    const set = this.#streams.get(sessionId);
    if (set === undefined) return;
    this.#streams.delete(sessionId);
    for (const s of set) s.destroy();
  }

  /** Streams by the session's digest (what the control plane knows a session by). */
  #closeStreamsByDigest(digest: string): void {
    for (const id of [...this.#streams.keys()]) if (sessionDigestOf(id) === digest) this.#closeStreams(id);
  }
}

/** Thrown when the upstream did not answer within the request's timeout. */
class TimedOut extends Error {}

const TIMED_OUT = Symbol('timed out');

/** Reads a body whole by `deadline` (performance.now ms): its text, TIMED_OUT, or the GatewayError that cut it. */
async function readWithin(body: Readable, limit: number, deadline: number): Promise<string | typeof TIMED_OUT | GatewayError> {
  let timer: NodeJS.Timeout | null = null;
  const read = readText(body, limit).catch((err: unknown) => (err instanceof GatewayError ? err : new GatewayError('mcp_upstream_error', 'the answer broke off')));
  try {
    return await Promise.race([
      read,
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - performance.now()));
      }),
    ]);
  } finally {
    if (timer !== null) clearTimeout(timer);
    if (!body.readableEnded) body.destroy();
  }
}

function timeoutError(timeoutMs: number): GatewayError {
  return new GatewayError('mcp_upstream_timeout', `Request timed out: the MCP server did not answer within ${timeoutMs} ms; the gateway cancelled the request.`);
}

function rpcAnswer(id: JsonRpcId, code: number, message: string, data?: unknown): GatewayResponse {
  return jsonResponse(200, jsonRpcErrorBody(id, data === undefined ? { code, message } : { code, message, data }));
}

function denialData(ctx: RequestContext, code: string) {
  return { status: 446, type: 'guardrail_error', code, hook_results: ctx.logFields.hook_results ?? null };
}

function isEventStream(upstream: UpstreamResponse): boolean {
  const type = headerValue(upstream.headers['content-type']);
  return type !== undefined && type.toLowerCase().startsWith('text/event-stream');
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** What an input check reads of a tool call: the string values of its arguments, one per line (keys and numbers left out). */
export function argumentText(args: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 64) return;
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (isObject(v)) for (const x of Object.values(v)) walk(x, depth + 1);
  };
  walk(args, 0);
  return out.join('\n');
}

/** What an output check reads of a tool's result: its text content, one block per line; else its structured content as JSON. */
export function resultText(result: Record<string, unknown>): string {
  const parts: string[] = [];
  if (Array.isArray(result.content)) {
    for (const c of result.content) {
      if (!isObject(c)) continue;
      if (c.type === 'text' && typeof c.text === 'string') parts.push(c.text);
      else if (c.type === 'resource' && isObject(c.resource) && typeof c.resource.text === 'string') parts.push(c.resource.text);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

/** The digest a session is stored under (the control plane's `sessionDigest`). */
function sessionDigestOf(sessionId: string): string {
  return hash('sha256', sessionId, 'hex');
}
