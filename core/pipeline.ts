import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { inject, injectable } from 'tsyringe';
import { requireScope } from './auth.js';
import { RequestContext } from './context.js';
import { refuseUnreadRoutingHeaders } from './routing-headers.js';
import { GatewayError, resolveErrorCode, toGatewayError, type ErrorCodeSpec } from './errors.js';
import type { GatewayHooks } from './hooks.js';
import { bearerToken } from './http/headers.js';
import { parseJsonObject, readBody } from './http/read-body.js';
import { errorResponse, readResponseBody, writeResponse } from './http/write-response.js';
import type { Registries } from './plugin.js';
import type { RouteTable } from './router.js';
import { TOKENS } from './tokens.js';
import type { AuthInfo, Dispatch, GatewayOptions, GatewayResponse, Target } from './types.js';
import { upstreamBodyError, type UpstreamClient } from './upstream/client.js';
import { createTransport } from './upstream/transport.js';

/** A request the gateway makes itself; see `Pipeline.internal`. */
export interface InternalRequest {
  /** Route name, e.g. `embeddings`. */
  route: string;
  target: Target;
  body: Record<string, unknown>;
  /** The client request it serves: its trace id, metadata and caller carry over, and its abort cancels this one. */
  parent?: RequestContext | null;
}

export interface InternalResponse {
  status: number;
  /** Parsed JSON answer, or null when it was not JSON. */
  body: unknown;
}

/**
 * A request the gateway runs on a caller's behalf after the caller's own
 * request ended (a line of a gateway-run batch): see `Pipeline.detached`.
 */
export interface DetachedRequest {
  /** Path of a provider route, e.g. `/v1/chat/completions`. */
  path: string;
  /** Headers as the caller sent them (metadata, workspace, forwarded headers); the gateway key is not needed. */
  headers: IncomingHttpHeaders;
  /** The JSON body. */
  body: Record<string, unknown>;
  /** Who it runs for, as authenticated when the work was accepted. */
  auth: AuthInfo | null;
  /** The routing target, as resolved when the work was accepted; null resolves it from `headers` now. */
  target: Target | null;
  /** Aborts the request (the runner is shutting down). */
  signal?: AbortSignal | null;
}

export interface DetachedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  /** The answer, read whole. */
  body: Buffer;
  traceId: string | null;
  /** Upstream calls made: 0 when the gateway answered on its own (validation, a limit, a guardrail, a cache hit). */
  attempts: number;
  /** The error the gateway answered with, if it raised one. */
  error: GatewayError | null;
}


/** Which hooks have taps, read once at boot so empty stages cost nothing per request. */
interface UsedHooks {
  request: boolean;
  auth: boolean;
  resolveProvider: boolean;
  beforeRequest: boolean;
  resolveTarget: boolean;
  afterResponse: boolean;
  log: boolean;
}

/**
 * Runs one request through the lifecycle:
 * request → auth → body → resolveProvider → beforeRequest → strategy → (per leaf: resolveTarget →
 * interceptors → transport) → afterResponse → write → log.
 */
@injectable()
export class Pipeline {
  #used: UsedHooks | null = null;
  #dispatch: Dispatch | null = null;
  #unreadHeaders: readonly string[] = [];
  #inFlight = 0;
  /** Who waits for no request in flight: every caller of idle() since the count was last zero. */
  #idle: Array<() => void> = [];

  constructor(
    @inject(TOKENS.Hooks) private readonly hooks: GatewayHooks,
    @inject(TOKENS.Registries) private readonly registries: Registries,
    @inject(TOKENS.Routes) private readonly routes: RouteTable,
    @inject(TOKENS.Logger) private readonly logger: Logger,
    @inject(TOKENS.Options) private readonly options: Readonly<Required<GatewayOptions>>,
    @inject(TOKENS.Upstream) private readonly upstream: UpstreamClient,
    @inject(TOKENS.ErrorCodes) private readonly errorCodes: ReadonlyMap<string, ErrorCodeSpec>,
  ) {}

  /**
   * Freezes the set of used hooks and composes the interceptor chain around the transport.
   * `unreadHeaders`: the routing headers no loaded plugin reads (refused when a request sends one).
   */
  seal(dispatch: Dispatch, unreadHeaders: readonly string[] = []): void {
    this.#unreadHeaders = unreadHeaders;
    const h = this.hooks;
    this.#used = {
      request: h.request.isUsed(),
      auth: h.auth.isUsed(),
      resolveProvider: h.resolveProvider.isUsed(),
      beforeRequest: h.beforeRequest.isUsed(),
      resolveTarget: h.resolveTarget.isUsed(),
      afterResponse: h.afterResponse.isUsed(),
      log: h.log.isUsed(),
    };
    this.#dispatch = dispatch;
  }

  /** The bare transport, before interceptors (used by seal's caller to compose). */
  transport(): Dispatch {
    return createTransport(this.registries.providers, this.upstream);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Resolves when no request is in flight. */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle.push(resolve);
    });
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const ctx = new RequestContext(req.method ?? 'GET', req.url ?? '/', req.headers, null, this.logger);
    res.once('close', () => {
      if (!res.writableFinished) {
        ctx.aborted = true;
        ctx.abort();
      }
    });
    this.#inFlight++;
    this.run(ctx, req, res).finally(() => {
      if (--this.#inFlight === 0 && this.#idle.length > 0) {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    });
  }

  private async run(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let response: GatewayResponse;
    try {
      response = await this.process(ctx, req);
    } catch (err) {
      response = this.failure(ctx, err);
    }
    // Which target answered, on successes and failures alike (a failed fallback names its last target).
    if (ctx.provider !== null) ctx.responseHeaders['x-gateway-provider'] = ctx.provider.name;
    if (ctx.targetPath !== null) ctx.responseHeaders['x-gateway-last-used-option-index'] = ctx.targetPath;
    try {
      await writeResponse(res, ctx, response);
    } catch (err) {
      this.logger.error({ err, trace_id: ctx.traceId }, 'writing the response failed');
      if (!res.headersSent) res.writeHead(500);
      res.destroy();
    }
    ctx.latencyMs = performance.now() - ctx.startedAt;
    if (this.#used!.log) {
      this.hooks.log.promise(ctx).catch((err: unknown) => this.logger.error({ err }, 'a log hook failed'));
    }
  }

  private failure(ctx: RequestContext, err: unknown): GatewayResponse {
    // A client that went away is not a gateway fault: recorded as 499 (nginx's convention), never as an internal error.
    const e = ctx.clientGone && !(err instanceof GatewayError) ? new GatewayError('client_closed_request', 'The client closed the connection before the answer was ready.') : this.resolve(toGatewayError(err));
    ctx.error = e;
    if (e.code === 'internal_error') this.logger.error({ err, trace_id: ctx.traceId, path: ctx.path }, 'unexpected error');
    const format = ctx.route?.errorFormat;
    return format === undefined ? errorResponse(e) : format.response(e, ctx);
  }

  /** A plugin code raised without its spec gets this gateway's meaning; an unknown one is logged and answered as an internal error. */
  private resolve(e: GatewayError): GatewayError {
    return e.resolved ? e : resolveErrorCode(e, this.errorCodes, (code) => this.logger.error({ code }, `unknown error code "${code}": declare it in the plugin's errorCodes`));
  }

  private async process(ctx: RequestContext, req: IncomingMessage): Promise<GatewayResponse> {
    const used = this.#used!;
    if (used.request) this.hooks.request.call(ctx);

    const match = this.routes.match(ctx.method, ctx.path);
    if (match === null) throw new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`);
    if (match === 'method_not_allowed') throw new GatewayError('method_not_allowed', `Method ${ctx.method} is not allowed on ${ctx.path}.`);
    let route = match.route;
    ctx.params = match.params;
    if (this.routes.defersToFallback(route, ctx)) {
      const fallback = this.routes.fallbackFor(ctx.method, ctx.path);
      if (fallback !== null) {
        route = fallback;
        ctx.params = null;
      }
    }
    ctx.route = route;

    if (route.auth !== false && used.auth) {
      // Every source is tried in stage order (a tap passes on a request carrying no credential of its kind, so a session
      // cookie is reached when there is no key); the one refusal, when none accepted it, is here.
      const auth = await this.hooks.auth.promise(ctx);
      if (auth === undefined) {
        const key = ctx.header('x-gateway-api-key');
        const message = key === undefined || key === '' ? 'Missing gateway API key: send it in the x-gateway-api-key header.' : 'Missing or unknown gateway API key (x-gateway-api-key).';
        throw new GatewayError('unauthorized', message, { param: 'x-gateway-api-key' });
      }
      ctx.auth = auth;
    }
    // Before the body: a key without the scope learns nothing from how its input would have been judged.
    if (route.scope !== undefined) requireScope(ctx, route.scope);

    const bodyMode = route.body ?? (ctx.method === 'GET' || ctx.method === 'DELETE' ? 'none' : 'json');
    if (bodyMode === 'stream') ctx.bodyStream = req;
    else if (bodyMode !== 'none') {
      ctx.rawBody = await readBody(req, this.options.maxBodyBytes);
      if (bodyMode === 'json') {
        const body = parseJsonObject(ctx.rawBody, this.options.maxJsonDepth);
        ctx.body = body;
        if (typeof body.model === 'string') ctx.model = body.model;
        ctx.stream = body.stream === true;
      }
    }

    if (route.kind === 'handler') {
      const answer = await route.handler!(ctx);
      if (answer !== null) return answer;
      // The handler passes: the generic proxy serves it as if this route had not matched.
      const fallback = this.routes.fallbackFor(ctx.method, ctx.path);
      if (fallback === null) throw new GatewayError('not_found', `Nothing found at ${ctx.method} ${ctx.path}.`);
      route = fallback;
      ctx.route = route;
      ctx.params = null;
      if (ctx.rawBody === null && route.body === 'raw' && bodyMode === 'none' && ctx.method !== 'GET' && ctx.method !== 'DELETE') {
        ctx.rawBody = await readBody(req, this.options.maxBodyBytes);
      }
    }

    if (this.#unreadHeaders.length > 0) this.refuseUnreadHeaders(ctx);
    const target = (used.resolveProvider ? await this.hooks.resolveProvider.promise(ctx) : undefined) ?? this.defaultTarget(ctx);
    ctx.target = target;

    let response = used.beforeRequest ? await this.hooks.beforeRequest.promise(ctx) : undefined;
    // A before tap may have replaced the target (a stored prompt that brings its own provider, STAGES.beforeRequest.PREPARE).
    if (response === undefined) response = await this.runTarget(ctx, ctx.target ?? target, '');
    if (used.afterResponse) response = await this.hooks.afterResponse.promise(response, ctx);
    return response;
  }

  /**
   * A request the gateway makes itself (e.g. an embedding for the semantic
   * cache): run through the strategy, interceptors and transport like a
   * client's, read whole, and logged (with `internal: true`), but not through
   * auth or the before/after hooks, so a cache cannot recurse into itself.
   */
  async internal(request: InternalRequest): Promise<InternalResponse> {
    const route = this.routes.byName(request.route);
    if (route === undefined) throw new Error(`internal request: no route named "${request.route}"`);
    const parent = request.parent ?? null;
    const ctx = new RequestContext('POST', route.path, {}, parent?.signal ?? null, this.logger);
    ctx.internal = true;
    ctx.route = route;
    ctx.traceId = parent?.traceId ?? null;
    ctx.parentSpanId = parent?.spanId ?? null;
    ctx.metadata = parent?.metadata ?? null;
    ctx.auth = parent?.auth ?? null;
    ctx.body = request.body;
    ctx.rawBody = Buffer.from(JSON.stringify(request.body));
    if (typeof request.body.model === 'string') ctx.model = request.body.model;
    ctx.target = request.target;
    try {
      const response = await this.runTarget(ctx, request.target, '');
      const bytes = await readResponseBody(response.body);
      for (const o of response.observers ?? []) {
        o.onChunk(bytes);
        o.onEnd?.(null);
      }
      ctx.status = response.status;
      let body: unknown = null;
      try {
        body = JSON.parse(bytes.toString('utf8'));
      } catch {
        /* a non-JSON answer leaves body null; the status says what happened */
      }
      return { status: response.status, body };
    } catch (err) {
      ctx.error = this.resolve(toGatewayError(err));
      ctx.status = ctx.error.status;
      throw ctx.error;
    } finally {
      ctx.latencyMs = performance.now() - ctx.startedAt;
      if (this.#used!.log) this.hooks.log.promise(ctx).catch((err: unknown) => this.logger.error({ err }, 'a log hook failed'));
    }
  }

  /**
   * A client's request run later, without its connection (a line of a
   * gateway-run batch): the whole lifecycle after auth, as if the caller had
   * sent it now with the given auth and target: request hook (trace ids,
   * metadata), the route's before hooks (validation, limits, guardrails,
   * cache), strategy, interceptors and transport, after hooks, the answer read
   * whole, and the log hook (with cost). Never throws: a refusal comes back as
   * its status and envelope. Not counted in `inFlight`: its owner drains it.
   */
  async detached(request: DetachedRequest): Promise<DetachedResponse> {
    const used = this.#used!;
    const ctx = new RequestContext('POST', request.path, request.headers, request.signal ?? null, this.logger);
    let response: GatewayResponse;
    let bytes: Buffer;
    try {
      if (used.request) this.hooks.request.call(ctx);
      const match = this.routes.match('POST', ctx.path);
      if (match === null || match === 'method_not_allowed' || match.route.kind !== 'provider' || this.routes.isFallback(match.route)) {
        throw new GatewayError('invalid_request', `POST ${ctx.path} is not a route the gateway can run on its own.`, { param: 'url' });
      }
      ctx.route = match.route;
      ctx.params = match.params;
      ctx.auth = request.auth;
      ctx.body = request.body;
      ctx.rawBody = Buffer.from(JSON.stringify(request.body));
      if (typeof request.body.model === 'string') ctx.model = request.body.model;
      ctx.stream = request.body.stream === true;
      if (request.target === null && this.#unreadHeaders.length > 0) this.refuseUnreadHeaders(ctx);
      const target = request.target ?? (used.resolveProvider ? await this.hooks.resolveProvider.promise(ctx) : undefined) ?? this.defaultTarget(ctx);
      ctx.target = target;
      let answer = used.beforeRequest ? await this.hooks.beforeRequest.promise(ctx) : undefined;
      if (answer === undefined) answer = await this.runTarget(ctx, target, '');
      if (used.afterResponse) answer = await this.hooks.afterResponse.promise(answer, ctx);
      response = answer;
      bytes = await readWhole(ctx, response);
    } catch (err) {
      response = this.failure(ctx, upstreamBodyError(err) ?? err);
      bytes = await readResponseBody(response.body);
    }
    for (const name in ctx.responseHeaders) response.headers[name] = ctx.responseHeaders[name]!;
    ctx.status = response.status;
    ctx.latencyMs = performance.now() - ctx.startedAt;
    if (used.log) this.hooks.log.promise(ctx).catch((err: unknown) => this.logger.error({ err }, 'a log hook failed'));
    return { status: response.status, headers: response.headers, body: bytes, traceId: ctx.traceId, attempts: ctx.attempts.length, error: ctx.error };
  }

  /**
   * Runs a target: through its strategy when it has children, else one leaf:
   * resolveTarget, then the interceptor chain around the transport.
   * Strategies call back here for children, with paths built by `childPath`. The root's path is ''.
   */
  readonly runTarget = (ctx: RequestContext, target: Target, path: string): Promise<GatewayResponse> => {
    if (target.strategy !== undefined) {
      const strategy = this.registries.strategies.require(target.strategy.mode, 'strategy.mode');
      return strategy.execute(ctx, target, this.runTarget, path);
    }
    ctx.targetPath = path === '' ? '0' : path;
    ctx.leafTarget = target;
    if (!this.#used!.resolveTarget) {
      ctx.resolvedTarget = target;
      return this.#dispatch!(ctx, target);
    }
    return this.hooks.resolveTarget.promise(target, ctx).then((resolved) => {
      // A tap that hands on null or a non-object is a plugin bug: a 500 naming the hook, not a TypeError deep in the transport.
      if (typeof resolved !== 'object' || resolved === null) throw new Error('a resolveTarget tap returned no target');
      ctx.resolvedTarget = resolved;
      return this.#dispatch!(ctx, resolved);
    });
  };

  /**
   * A routing header no loaded plugin reads is a 400, not a request sent elsewhere. The one-provider
   * default (see {@link defaultTarget}) reads `x-gateway-provider` itself when it names that provider.
   */
  private refuseUnreadHeaders(ctx: RequestContext): void {
    refuseUnreadRoutingHeaders(ctx.headers, this.#unreadHeaders, (name, value) => name === 'x-gateway-provider' && this.usesOnlyProvider() && value === this.registries.providers.names()[0]);
  }

  /** Whether requests go to the only provider by default (one provider, no resolver plugin: the minimal build). */
  private usesOnlyProvider(): boolean {
    return this.registries.providers.size === 1 && !this.#used!.resolveProvider;
  }

  /**
   * With no resolver answer. A build with one provider and no resolver plugin
   * at all (the minimal build) sends everything to that provider, with the
   * client's bearer token as its key. Otherwise the client must choose.
   */
  private defaultTarget(ctx: RequestContext): Target {
    const providers = this.registries.providers;
    if (this.usesOnlyProvider()) return { provider: providers.names()[0]!, api_key: bearerToken(ctx.headers) };
    if (this.routes.isFallback(ctx.route!)) {
      throw new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}, and no provider was selected to proxy it to (x-gateway-provider).`);
    }
    throw new GatewayError('provider_required', 'No provider selected. Send x-gateway-provider (and Authorization: Bearer <provider key>) or x-gateway-config.', {
      param: 'x-gateway-provider',
    });
  }
}

/** Reads an answer whole, feeding its observers (usage, cache capture) as a client's write would. */
async function readWhole(ctx: RequestContext, response: GatewayResponse): Promise<Buffer> {
  const observers = response.observers;
  let bytes: Buffer;
  try {
    bytes = await readResponseBody(response.body);
  } catch (err) {
    if (observers !== null) for (const o of observers) o.onEnd?.(err as Error);
    ctx.aborted = true;
    throw err;
  }
  ctx.firstByteMs = performance.now() - ctx.startedAt;
  if (observers !== null) {
    for (const o of observers) {
      if (bytes.length > 0) o.onChunk(bytes);
      o.onEnd?.(null);
    }
  }
  return bytes;
}
