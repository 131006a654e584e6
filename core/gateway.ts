import 'reflect-metadata';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { container as rootContainer } from 'tsyringe';
import { checkErrorCode, CORE_ERROR_CODES, GatewayError, type ErrorCodeSpec } from './errors.js';
import { CORE_TARGET_FIELDS, TargetFields } from './fields.js';
import { createHooks, type GatewayHooks } from './hooks.js';
import { coreTaps, onlyProviderRule } from './lifecycle/defaults.js';
import { enableRouteFilters } from './lifecycle/route-taps.js';
import { declineUpgrade, wantsWebSocket, writeUpgradeAnswer } from './http/upgrade-answer.js';
import { errorResponse, writeResponse } from './http/write-response.js';
import { RequestContext } from './context.js';
import { createLogger, flushLogger, redactPaths, withRedaction } from './logger.js';
import { Pipeline } from './pipeline.js';
import type { GatewayPlugin, PluginAPI, Registries } from './plugin.js';
import { Registry } from './registry.js';
import { RouteTable } from './router.js';
import { unreadRoutingHeaders } from './routing-headers.js';
import { describeToken, TOKENS } from './tokens.js';
import type { Dispatch, GatewayOptions, Interceptor } from './types.js';
import { UpstreamClient } from './upstream/client.js';
import { checkGatewayApi } from './version.js';
import { DEFAULT_MAX_JSON_DEPTH } from './json-limits.js';

/** What {@link createGateway} takes: the plugins, the core's options and a logger. */
export interface CreateGatewayOptions {
  /** Plugins, applied in order. */
  plugins: readonly GatewayPlugin[];
  /** Core options; defaults in {@link DEFAULT_OPTIONS}. */
  options?: GatewayOptions;
  /**
   * Root logger; default: JSON lines to stdout at `info`. The gateway logs
   * through a child of it that censors the core's paths and every declared
   * credential field (a child's redaction replaces its parent's).
   */
  logger?: Logger;
}

/** A running gateway: a node:http request handler plus its lifecycle. */
export interface Gateway {
  /** Pass to `http.createServer`. Requests that arrive before `ready` wait for it. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * Pass to the HTTP server's `upgrade` event (`server.on('upgrade', gateway.upgrade)`): a WebSocket handshake runs
   * the request's stages (route, auth, scope) and the route's handler takes the socket (the Responses door's
   * WebSocket mode), or is answered as a plain HTTP error and closed; an offer of another protocol (`h2c`) is
   * declined and the request served over HTTP/1.1 by the server that received it.
   */
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Resolves when every plugin's `onReady` finished. Rejects when one failed. */
  readonly ready: Promise<void>;
  /** The lifecycle hooks the plugins tapped (read-only after boot; tests and embedders may inspect them). */
  readonly hooks: GatewayHooks;
  /** The gateway's logger, with the core's and the plugins' credential paths redacted. */
  readonly logger: Logger;
  /** Requests being served now. */
  readonly inFlight: number;
  /**
   * Takes the gateway out of rotation without stopping it: the readiness route (`GET /ready`) answers 503 from now
   * on, while every request is still served, so a load balancer stops sending traffic before `close` refuses it.
   * `close` does this too.
   */
  markUnready(): void;
  /**
   * Stops the gateway: from the call on, a new request is answered 503
   * `service_unavailable` (with `connection: close`) and not run; requests
   * already received, those still waiting for `ready` included, get up to
   * `graceMs` to finish (streams too); then plugins' `onClose` run in reverse
   * order, upstream pools close and logs are flushed. The HTTP server should
   * stop accepting connections first.
   */
  close(graceMs?: number): Promise<void>;
}

/** The core options' defaults, filled into {@link GatewayOptions} by `createGateway` (`api.options` has them in place). */
export const DEFAULT_OPTIONS: Readonly<Required<GatewayOptions>> = Object.freeze({
  maxBodyBytes: 50 * 1024 * 1024,
  maxJsonDepth: DEFAULT_MAX_JSON_DEPTH,
  upstreamHeadersTimeoutMs: 600_000,
  upstreamBodyTimeoutMs: 300_000,
  upstreamConnections: 256,
  basePath: '/v1',
  outbound: Object.freeze({ allowPrivateHosts: false, allowHosts: Object.freeze([]) }),
});

interface InterceptorEntry {
  name: string;
  stage: number;
  order: number;
  interceptor: Interceptor;
}

/** Builds a gateway from plugins. Nothing is served until `ready` (handled automatically by `handler`). */
export function createGateway(init: CreateGatewayOptions): Gateway {
  const options = Object.freeze({ ...DEFAULT_OPTIONS, ...stripUndefined(init.options ?? {}) });
  // What plugins declare is settled before any of them is applied: versions, fields, error codes.
  const targetFields = new TargetFields();
  targetFields.declare('core', CORE_TARGET_FIELDS);
  const errorCodes = new Map<string, ErrorCodeSpec & { owner: string }>(Object.entries(CORE_ERROR_CODES).map(([code, spec]) => [code, { ...spec, owner: 'core' }]));
  const names = new Set<string>();
  const readHeaders = new Set<string>();
  // What plugins say they provide, known before any is applied (api.provided).
  const declaredProvides = new Set<symbol>(init.plugins.flatMap((p) => p.provides ?? []));
  for (const plugin of init.plugins) {
    if (names.has(plugin.name)) throw new Error(`plugin "${plugin.name}" is applied twice`);
    names.add(plugin.name);
    for (const h of plugin.headers ?? []) readHeaders.add(h.toLowerCase());
    checkGatewayApi(plugin.name, plugin.gatewayApi);
    if (plugin.targetFields !== undefined) targetFields.declare(plugin.name, plugin.targetFields);
    for (const [code, spec] of Object.entries(plugin.errorCodes ?? {})) {
      checkErrorCode(code, spec, plugin.name);
      const known = errorCodes.get(code);
      if (known !== undefined && (known.status !== spec.status || known.type !== spec.type)) {
        throw new Error(`plugin "${plugin.name}": error code "${code}" is already declared by "${known.owner}" as ${known.status} ${known.type}`);
      }
      if (known === undefined) errorCodes.set(code, { status: spec.status, type: spec.type, owner: plugin.name });
    }
  }
  targetFields.seal();
  const paths = redactPaths(targetFields.credentials());
  const logger = init.logger === undefined ? createLogger({ redact: paths }) : withRedaction(init.logger, paths);
  const hooks = createHooks();
  // Before any plugin taps: a tap may then name the routes it serves (core/lifecycle/route-taps.ts).
  enableRouteFilters(hooks);
  const registries: Registries = {
    providers: new Registry('provider'),
    strategies: new Registry('strategy'),
    cacheModes: new Registry('cache mode'),
    checks: new Registry('guardrail check'),
    stores: new Registry('store'),
  };
  const routes = new RouteTable();
  const upstream = new UpstreamClient({
    connections: options.upstreamConnections,
    headersTimeoutMs: options.upstreamHeadersTimeoutMs,
    bodyTimeoutMs: options.upstreamBodyTimeoutMs,
    outbound: options.outbound,
  });

  // One child container per gateway (never per request), so two gateways in one process stay apart.
  const container = rootContainer.createChildContainer();
  container.register(TOKENS.Logger, { useValue: logger });
  container.register(TOKENS.Options, { useValue: options });
  container.register(TOKENS.Hooks, { useValue: hooks });
  container.register(TOKENS.Registries, { useValue: registries });
  container.register(TOKENS.Routes, { useValue: routes });
  container.register(TOKENS.Upstream, { useValue: upstream });
  // This gateway's own table: a plugin code raised without its spec is answered with the meaning declared here.
  container.register(TOKENS.ErrorCodes, { useValue: errorCodes });

  const interceptors: InterceptorEntry[] = [];
  const readyFns: Array<() => void | Promise<void>> = [];
  const closeFns: Array<() => void | Promise<void>> = [];
  const drainFns: Array<() => void> = [];
  let booting = true;
  let pipelineRef: Pipeline | null = null;
  const duringBoot = (what: string) => {
    if (!booting) throw new Error(`${what} is only allowed while plugins are applied`);
  };

  const api: PluginAPI = {
    ...registries,
    hooks,
    routes,
    targetFields,
    errorCodes,
    logger,
    options,
    upstream,
    addInterceptor(name, interceptor, stage = 0) {
      duringBoot('addInterceptor');
      interceptors.push({ name, stage, order: interceptors.length, interceptor });
    },
    provide(token, value) {
      duringBoot('provide');
      container.register(token, { useValue: value });
    },
    resolve<T>(token: symbol): T {
      return container.resolve<T>(token);
    },
    tryResolve<T>(token: symbol): T | undefined {
      return container.isRegistered(token, true) ? container.resolve<T>(token) : undefined;
    },
    provided(token) {
      return declaredProvides.has(token) || container.isRegistered(token, true);
    },
    internalRequest(request) {
      if (pipelineRef === null) return Promise.reject(new Error('internalRequest is only valid after boot'));
      return pipelineRef.internal(request);
    },
    resolveLeaf(ctx, target) {
      if (pipelineRef === null) return Promise.reject(new Error('resolveLeaf is only valid after boot'));
      return pipelineRef.resolveLeaf(ctx, target);
    },
    runRequest(request) {
      if (pipelineRef === null) return Promise.reject(new Error('runRequest is only valid after boot'));
      return pipelineRef.detached(request);
    },
    onReady(fn) {
      duringBoot('onReady');
      readyFns.push(fn);
    },
    onClose(fn) {
      duringBoot('onClose');
      closeFns.push(fn);
    },
    onDrain(fn) {
      duringBoot('onDrain');
      drainFns.push(fn);
    },
    accepting() {
      return !unready;
    },
  };

  for (const plugin of init.plugins) plugin.apply(api);
  booting = false;
  checkServices(init.plugins, (token) => container.isRegistered(token, true));
  for (const r of Object.values(registries)) (r as Registry<unknown>).freeze();
  routes.freeze();

  const pipeline = container.resolve(Pipeline);
  // The core's defaults, as taps at their named stages: the 401 (STAGES.auth.REFUSE) and the default target (STAGES.resolveProvider.DEFAULT_TARGET).
  const onlyProvider = onlyProviderRule(registries, hooks);
  pipeline.seal(compose(interceptors, pipeline.transport()), unreadRoutingHeaders(readHeaders), { taps: coreTaps(routes, onlyProvider), onlyProvider });
  pipelineRef = pipeline;

  let isReady = false;
  const ready = (async () => {
    for (const fn of readyFns) await fn();
    isReady = true;
  })();
  // A boot failure is reported through `ready` and on each waiting request, not as an unhandled rejection.
  ready.catch(() => undefined);

  // Set as soon as close() is called: a request that comes in from then on (on a keep-alive connection the server has
  // not closed, or sent just as the signal came) is answered 503 and never run, so the drain has a fixed set of
  // requests to wait for and none of them starts once plugins close.
  let refusing = false;
  // Out of rotation (markUnready, or closing): the readiness route says so; requests are still served until close.
  let unready = false;
  // Requests received before `ready`: not in the pipeline's count yet, but accepted, so close() waits for them too.
  let waitingForReady = 0;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (refusing) return refuse(req, res, logger);
    if (isReady) return pipeline.handle(req, res);
    waitingForReady++;
    ready.then(
      () => {
        waitingForReady--;
        pipeline.handle(req, res);
      },
      () => {
        waitingForReady--;
        const ctx = new RequestContext(req.method ?? 'GET', req.url ?? '/', req.headers, null, logger);
        void writeResponse(res, ctx, errorResponse(new GatewayError('service_unavailable', 'The gateway failed to start; see its logs.')));
      },
    );
  };

  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Once node:http hands a socket over, nothing listens for its errors: a client that resets it would otherwise be
    // an unhandled 'error' event, which ends the process.
    socket.on('error', () => socket.destroy());
    // Only WebSockets are switched to; any other offer (h2c) is declined and the request served over HTTP/1.1.
    if (!wantsWebSocket(req) && declineUpgrade(req, socket, head)) return;
    const refused = (message: string) => {
      const answer = errorResponse(new GatewayError('service_unavailable', message));
      void writeUpgradeAnswer(socket, answer, {}).catch(() => socket.destroy());
    };
    if (refusing) return refused('The gateway is shutting down.');
    if (isReady) return pipeline.upgrade(req, socket, head);
    waitingForReady++;
    ready.then(
      () => {
        waitingForReady--;
        pipeline.upgrade(req, socket, head);
      },
      () => {
        waitingForReady--;
        refused('The gateway failed to start; see its logs.');
      },
    );
  };

  let closing: Promise<void> | null = null;
  const close = (graceMs = 10_000): Promise<void> => {
    // Synchronously, before any await: a request dispatched after this call is refused.
    refusing = true;
    unready = true;
    closing ??= (async () => {
      for (const fn of drainFns) {
        try {
          fn();
        } catch (err) {
          logger.error({ err }, 'a plugin failed to drain');
        }
      }
      const grace = delay(graceMs);
      // Requests waiting for `ready` reach the pipeline (and its count) in the same turn as `ready` settles, before this.
      if (waitingForReady > 0) await Promise.race([ready.catch(() => undefined), grace]);
      await Promise.race([pipeline.idle(), grace]);
      if (pipeline.inFlight > 0) logger.warn({ in_flight: pipeline.inFlight }, 'closing with requests still in flight');
      for (const fn of closeFns.reverse()) {
        try {
          await fn();
        } catch (err) {
          logger.error({ err }, 'a plugin failed to close');
        }
      }
      await upstream.close().catch(() => undefined);
      await flushLogger(logger);
    })();
    return closing;
  };

  return {
    handler,
    upgrade,
    ready,
    hooks,
    logger,
    get inFlight() {
      return pipeline.inFlight;
    },
    markUnready() {
      unready = true;
    },
    close,
  };
}

/**
 * What plugins declared against what they did: a required service no plugin provides, or a declared
 * one its plugin never provided, stops the boot with the plugin and the service named.
 */
function checkServices(plugins: readonly GatewayPlugin[], registered: (token: symbol) => boolean): void {
  for (const plugin of plugins) {
    for (const token of plugin.provides ?? []) {
      if (!registered(token)) throw new Error(`plugin "${plugin.name}" declares that it provides ${describeToken(token)} but did not provide it in apply()`);
    }
  }
  for (const plugin of plugins) {
    for (const token of plugin.requires ?? []) {
      if (!registered(token)) throw new Error(`plugin "${plugin.name}" requires the service ${describeToken(token)}, which no loaded plugin provides: load that plugin (before or after it), or leave "${plugin.name}" out`);
    }
  }
}

/** The answer to a request that arrives once close() was called: 503, and the connection closes. Not logged, as a refused connection would not be. */
function refuse(req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  const ctx = new RequestContext(req.method ?? 'GET', req.url ?? '/', req.headers, null, logger);
  res.shouldKeepAlive = false;
  const response = errorResponse(new GatewayError('service_unavailable', 'The gateway is shutting down; send the request again.'));
  response.headers['retry-after'] = '1';
  void writeResponse(res, ctx, response);
}

/** Folds interceptors around the transport: lowest stage outermost, then registration order. */
function compose(entries: InterceptorEntry[], transport: Dispatch): Dispatch {
  // Stages are named in core/stages.ts (STAGES.interceptor); equal stages keep registration order.
  const sorted = [...entries].sort((a, b) => a.stage - b.stage || a.order - b.order);
  let dispatch = transport;
  for (let i = sorted.length - 1; i >= 0; i--) dispatch = sorted[i]!.interceptor(dispatch);
  return dispatch;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(value) as Array<keyof T>) if (value[key] !== undefined) out[key] = value[key];
  return out;
}
