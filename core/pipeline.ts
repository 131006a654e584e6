import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { inject, injectable } from 'tsyringe';
import { RequestContext, stateKey } from './context.js';
import { refuseUnreadRoutingHeaders } from './routing-headers.js';
import { GatewayError, resolveErrorCode, toGatewayError, type ErrorCodeSpec } from './errors.js';
import type { GatewayHooks } from './hooks.js';
import { writeUpgradeAnswer } from './http/upgrade-answer.js';
import { errorResponse, readResponseBody, writeResponse } from './http/write-response.js';
import { compileRouteHooks, type CoreTap, type RouteHooks } from './lifecycle/route-taps.js';
import { entryStages, runDelivered, runStages, type EntryStages, type StageHost } from './lifecycle/table.js';
import type { Registries } from './plugin.js';
import type { RouteTable } from './router.js';
import { TOKENS } from './tokens.js';
import type { AuthInfo, Dispatch, GatewayOptions, GatewayResponse, RouteDefinition, Target } from './types.js';
import { upstreamBodyError, type UpstreamClient } from './upstream/client.js';
import { createTransport } from './upstream/transport.js';

/** A request the gateway makes itself (an embedding for a cache): what `PluginAPI.internalRequest` takes. */
export interface InternalRequest {
  /** Route name, e.g. `embeddings`. */
  route: string;
  /** The target to run it on (a leaf or a nested strategy). */
  target: Target;
  /** The JSON body, in the route's format. */
  body: Record<string, unknown>;
  /** The client request it serves: its trace id, metadata and caller carry over, and its abort cancels this one. */
  parent?: RequestContext | null;
}

/** The answer to an internal request, read whole. */
export interface InternalResponse {
  /** HTTP status of the answer. */
  status: number;
  /** Parsed JSON answer, or null when it was not JSON. */
  body: unknown;
}

/**
 * A request the gateway runs on a caller's behalf after the caller's own
 * request ended (a line of a gateway-run batch): what `PluginAPI.runRequest` takes.
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

/** The answer to a detached request (`PluginAPI.runRequest`), read whole; refusals included. */
export interface DetachedResponse {
  /** HTTP status of the answer. */
  status: number;
  /** Response headers, by lower-case name. */
  headers: Record<string, string | string[]>;
  /** The answer, read whole. */
  body: Buffer;
  /** The request's trace id, to find it in the logs; null when no trace plugin set one. */
  traceId: string | null;
  /** Upstream calls made: 0 when the gateway answered on its own (validation, a limit, a guardrail, a cache hit). */
  attempts: number;
  /** The error the gateway answered with, if it raised one. */
  error: GatewayError | null;
}


/**
 * Runs requests through the lifecycle table (core/lifecycle/table.ts): request → route → auth →
 * scope → body → handler → resolveProvider → beforeRequest → strategy (per leaf: resolveTarget →
 * interceptors → transport) → afterResponse → (delivery) → log. `handle`, `internal` and `detached`
 * are its three entry points; each runs the table less the stages it skips.
 */
@injectable()
export class Pipeline implements StageHost {
  #dispatch: Dispatch | null = null;
  #unreadHeaders: readonly string[] = [];
  #routeHooks = new Map<RouteDefinition | null, RouteHooks>();
  #unrouted: RouteHooks | null = null;
  #process: EntryStages | null = null;
  #internal: EntryStages | null = null;
  #detached: EntryStages | null = null;
  #onlyProvider: () => string | null = () => null;
  #inFlight = 0;
  /** Who waits for no request in flight: every caller of idle() since the count was last zero. */
  #idle: Array<() => void> = [];

  constructor(
    @inject(TOKENS.Hooks) readonly hooks: GatewayHooks,
    @inject(TOKENS.Registries) private readonly registries: Registries,
    @inject(TOKENS.Routes) readonly routes: RouteTable,
    @inject(TOKENS.Logger) private readonly logger: Logger,
    @inject(TOKENS.Options) readonly options: Readonly<Required<GatewayOptions>>,
    @inject(TOKENS.Upstream) private readonly upstream: UpstreamClient,
    @inject(TOKENS.ErrorCodes) private readonly errorCodes: ReadonlyMap<string, ErrorCodeSpec>,
  ) {}

  /**
   * Compiles each route's hooks (the taps that serve it, with the core's defaults at their stages),
   * the stages of each entry point, and takes the interceptor chain composed around the transport.
   * `unreadHeaders`: the routing headers no loaded plugin reads (refused when a request sends one).
   * `defaults`: the core's own taps (core/lifecycle/defaults.ts), and the one-provider rule they use.
   */
  seal(dispatch: Dispatch, unreadHeaders: readonly string[], defaults: { taps: readonly CoreTap[]; onlyProvider: () => string | null }): void {
    this.#unreadHeaders = unreadHeaders;
    this.#onlyProvider = defaults.onlyProvider;
    this.#routeHooks = compileRouteHooks(
      this.hooks,
      defaults.taps,
      this.routes.list().map((e) => e.route),
    );
    this.#unrouted = this.#routeHooks.get(null)!;
    this.#process = entryStages('process', this.hooks);
    this.#internal = entryStages('internal', this.hooks);
    this.#detached = entryStages('detached', this.hooks);
    this.#dispatch = dispatch;
  }

  readonly logFailed = (err: unknown): void => {
    this.logger.error({ err }, 'a log hook failed');
  };

  get unrouted(): RouteHooks {
    return this.#unrouted!;
  }

  /** Sets the request's route and the hooks compiled for it. */
  enter(ctx: RequestContext, route: RouteDefinition): void {
    ctx.route = route;
    ctx.routeHooks = this.#routeHooks.get(route) ?? this.#unrouted;
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

  /**
   * An HTTP upgrade (a WebSocket handshake): the same stages as any request (its route, auth, scope, the route's
   * handler), with the socket on `ctx.upgrade` for the handler to take. One it does not take gets the answer as a
   * plain HTTP response on the socket. Counted in flight only until the handler answered: a socket it took lives
   * on its own (its plugin ends it on drain).
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const ctx = new RequestContext(req.method ?? 'GET', req.url ?? '/', req.headers, null, this.logger);
    ctx.upgrade = { req, socket, head, taken: false };
    // Only a route that takes upgrades runs anything: an upgrade elsewhere (the generic proxy's paths included) is
    // refused here, before auth, and no upstream is called for it.
    const match = this.routes.match(ctx.method, ctx.path);
    if (match === null || match === 'method_not_allowed' || match.route.upgrade !== true) {
      const error = match === null ? new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`) : new GatewayError('invalid_request', `${ctx.method} ${ctx.path} does not take an upgrade to ${String(ctx.header('upgrade') ?? '')}.`, { param: 'upgrade' });
      void writeUpgradeAnswer(socket, errorResponse(error), {}).catch(() => socket.destroy());
      return;
    }
    const gone = () => {
      if (!ctx.upgrade!.taken) {
        ctx.aborted = true;
        ctx.abort();
      }
    };
    socket.once('close', gone);
    this.#inFlight++;
    this.runUpgrade(ctx, socket).finally(() => {
      socket.off('close', gone);
      if (--this.#inFlight === 0 && this.#idle.length > 0) {
        for (const resolve of this.#idle.splice(0)) resolve();
      }
    });
  }

  private async runUpgrade(ctx: RequestContext, socket: Duplex): Promise<void> {
    let response: GatewayResponse;
    try {
      response = (await runStages(this.#process!.answer, this, ctx, 'process', ctx.upgrade!.req))!;
    } catch (err) {
      response = this.failure(ctx, err);
    }
    ctx.status = ctx.upgrade!.taken ? 101 : response.status;
    if (ctx.upgrade!.taken) {
      // A taken socket's session is over: its handler's answer (a summary of the session) is what the log and
      // metrics see of it, as if it had been sent.
      const body = response.body;
      if (typeof body === 'string' || Buffer.isBuffer(body)) {
        const bytes = typeof body === 'string' ? Buffer.from(body) : body;
        for (const o of response.observers ?? []) {
          o.onChunk(bytes);
          o.onEnd?.(null);
        }
      }
    } else {
      // Not taken: an upgrade nobody serves here is refused, whatever a handler meant to answer a plain request with.
      if (response.status < 400) response = this.failure(ctx, new GatewayError('invalid_request', `${ctx.method} ${ctx.path} does not take an upgrade to ${String(ctx.header('upgrade') ?? '')}.`, { param: 'upgrade' }));
      ctx.status = response.status;
      try {
        await writeUpgradeAnswer(socket, response, ctx.responseHeaders);
      } catch (err) {
        this.logger.error({ err, trace_id: ctx.traceId }, 'answering an upgrade failed');
        socket.destroy();
      }
    }
    ctx.latencyMs = performance.now() - ctx.startedAt;
    runDelivered(this.#process!.delivered, this, ctx, 'process');
  }

  private async run(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let response: GatewayResponse;
    try {
      // Every client route answers or throws by the end of the table (the strategy stage, at the latest).
      response = (await runStages(this.#process!.answer, this, ctx, 'process', req))!;
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
    runDelivered(this.#process!.delivered, this, ctx, 'process');
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
    ctx.parent = parent;
    this.enter(ctx, route);
    ctx.traceId = parent?.traceId ?? null;
    ctx.parentSpanId = parent?.spanId ?? null;
    ctx.metadata = parent?.metadata ?? null;
    ctx.auth = parent?.auth ?? null;
    ctx.body = request.body;
    ctx.rawBody = Buffer.from(JSON.stringify(request.body));
    if (typeof request.body.model === 'string') ctx.model = request.body.model;
    ctx.target = request.target;
    try {
      const response = (await runStages(this.#internal!.answer, this, ctx, 'internal', null))!;
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
      runDelivered(this.#internal!.delivered, this, ctx, 'internal');
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
    const ctx = new RequestContext('POST', request.path, request.headers, request.signal ?? null, this.logger);
    let response: GatewayResponse;
    let bytes: Buffer;
    try {
      ctx.auth = request.auth;
      ctx.body = request.body;
      ctx.rawBody = Buffer.from(JSON.stringify(request.body));
      if (typeof request.body.model === 'string') ctx.model = request.body.model;
      ctx.stream = request.body.stream === true;
      // A target accepted with the work runs as it was; none resolves one from the headers now (the resolveProvider stage).
      ctx.target = request.target;
      response = (await runStages(this.#detached!.answer, this, ctx, 'detached', null))!;
      bytes = await readWhole(ctx, response);
    } catch (err) {
      response = this.failure(ctx, upstreamBodyError(err) ?? err);
      bytes = await readResponseBody(response.body);
    }
    for (const name in ctx.responseHeaders) response.headers[name] = ctx.responseHeaders[name]!;
    ctx.status = response.status;
    ctx.latencyMs = performance.now() - ctx.startedAt;
    runDelivered(this.#detached!.delivered, this, ctx, 'detached');
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
    // A plugin that keyed state by this leaf (routing, the cache) resolved it already: the call uses the same.
    const early = ctx.get(RESOLVED)?.get(target);
    if (early !== undefined) {
      return early.then((resolved) => {
        ctx.resolvedTarget = resolved;
        return this.#dispatch!(ctx, resolved);
      });
    }
    const resolveTarget = ctx.routeHooks!.resolveTarget;
    if (resolveTarget === null) {
      ctx.resolvedTarget = target;
      return this.#dispatch!(ctx, target);
    }
    return resolveTarget(target, ctx).then((resolved) => {
      ctx.resolvedTarget = checkedTarget(resolved);
      return this.#dispatch!(ctx, resolved);
    });
  };

  /**
   * The target a leaf stands for, as `resolveTarget` makes it, resolved once per request and leaf
   * object: the strategy's call of that leaf uses the same (PluginAPI.resolveLeaf).
   */
  readonly resolveLeaf = (ctx: RequestContext, target: Target): Promise<Target> => {
    if (target.strategy !== undefined) return Promise.reject(new Error('resolveLeaf takes a leaf target, not a strategy'));
    let memo = ctx.get(RESOLVED);
    if (memo === undefined) ctx.set(RESOLVED, (memo = new WeakMap()));
    let resolved = memo.get(target);
    if (resolved === undefined) {
      const resolveTarget = ctx.routeHooks?.resolveTarget ?? null;
      resolved = resolveTarget === null ? Promise.resolve(target) : resolveTarget(target, ctx).then(checkedTarget);
      memo.set(target, resolved);
    }
    return resolved;
  };

  /**
   * A routing header no loaded plugin reads is a 400, not a request sent elsewhere. The one-provider
   * default (core/lifecycle/defaults.ts) reads `x-gateway-provider` itself when it names that provider.
   */
  refuseUnreadHeaders(ctx: RequestContext): void {
    if (this.#unreadHeaders.length === 0) return;
    refuseUnreadRoutingHeaders(ctx.headers, this.#unreadHeaders, (name, value) => name === 'x-gateway-provider' && value === this.#onlyProvider());
  }
}

/** The leaves of a request resolved before their call ({@link Pipeline.resolveLeaf}), by leaf object. */
const RESOLVED = stateKey<WeakMap<Target, Promise<Target>>>('core:resolved-leaves');

/** A tap that hands on null or a non-object is a plugin bug: a 500 naming the hook, not a TypeError deep in the transport. */
function checkedTarget(resolved: Target): Target {
  if (typeof resolved !== 'object' || resolved === null) throw new Error('a resolveTarget tap returned no target');
  return resolved;
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
