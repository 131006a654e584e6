import type { IncomingMessage } from 'node:http';
import { requireScope } from '../auth.js';
import type { RequestContext } from '../context.js';
import { GatewayError } from '../errors.js';
import type { GatewayHooks } from '../hooks.js';
import { parseJsonObject, readBody } from '../http/read-body.js';
import type { RouteTable } from '../router.js';
import type { GatewayOptions, GatewayResponse, RouteDefinition, Target } from '../types.js';
import type { RouteHooks } from './route-taps.js';

/**
 * How a request enters the lifecycle: `process`, a client's request on its connection; `internal`,
 * a request the gateway makes itself (an embedding for a cache); `detached`, a client's request run
 * later without its connection (a batch line).
 */
export type EntryPoint = 'process' | 'internal' | 'detached';

/** What the stages need of the pipeline that runs them. */
export interface StageHost {
  readonly hooks: GatewayHooks;
  readonly routes: RouteTable;
  readonly options: Readonly<Required<GatewayOptions>>;
  /** Sets `ctx.route` and the route's compiled hooks together (every change of route goes through here). */
  enter(ctx: RequestContext, route: RouteDefinition): void;
  /** The routing headers no loaded plugin reads are refused (a no-op when every one is read). */
  refuseUnreadHeaders(ctx: RequestContext): void;
  runTarget(ctx: RequestContext, target: Target, path: string): Promise<GatewayResponse>;
  /** Logs a failed log tap (one function for every request, not a closure per request). */
  readonly logFailed: (err: unknown) => void;
  /** The hooks of a request that matched no route (the log hook's unfiltered taps). */
  readonly unrouted: RouteHooks;
}

type StageResult = GatewayResponse | undefined | Promise<GatewayResponse | undefined>;

/** One step of the lifecycle. */
export interface Stage {
  readonly name: string;
  /** The entry points that skip this stage; every other one runs it. */
  readonly skippedBy: readonly EntryPoint[];
  /** An answer from this stage is final: the stages after it (up to delivery) do not run. A handler's answer is. */
  readonly ends?: boolean;
  /** Runs after the answer was delivered (written to the client, or read whole), not while it is made. */
  readonly delivered?: boolean;
  /** Whether the stage has any work in this gateway, decided once at boot; absent: always. An unused stage costs nothing per request. */
  used?(hooks: GatewayHooks): boolean;
  /**
   * Runs the stage. `response` is the answer so far (undefined before one exists); a returned
   * response replaces it, undefined keeps it. `req` is the client's connection (`process` only).
   */
  run(host: StageHost, ctx: RequestContext, entry: EntryPoint, req: IncomingMessage | null, response: GatewayResponse | undefined): StageResult;
}

/** A handler route's stage: its answer, or (when it passes) the generic proxy in its place. */
async function runHandler(host: StageHost, ctx: RequestContext, req: IncomingMessage | null): Promise<GatewayResponse | undefined> {
  const route = ctx.route!;
  const answer = await route.handler!(ctx);
  if (answer !== null) return answer;
  // The handler passes: the generic proxy serves it as if this route had not matched.
  const fallback = host.routes.fallbackFor(ctx.method, ctx.path);
  if (fallback === null) throw new GatewayError('not_found', `Nothing found at ${ctx.method} ${ctx.path}.`);
  const bodyMode = bodyModeOf(ctx, route);
  host.enter(ctx, fallback);
  ctx.params = null;
  if (ctx.rawBody === null && fallback.body === 'raw' && bodyMode === 'none' && ctx.method !== 'GET' && ctx.method !== 'DELETE') {
    ctx.rawBody = await readBody(req!, host.options.maxBodyBytes);
  }
  return undefined;
}

// The stages' awaited halves: module functions, so a stage allocates no closure per request.

/** The route's auth taps; the last (STAGES.auth.REFUSE) refuses, so an answer is always an AuthInfo. */
async function authenticate(auth: NonNullable<RouteHooks['auth']>, ctx: RequestContext): Promise<undefined> {
  ctx.auth = (await auth(ctx))!;
  return undefined;
}

async function readRequestBody(host: StageHost, ctx: RequestContext, req: IncomingMessage, json: boolean): Promise<undefined> {
  const raw = await readBody(req, host.options.maxBodyBytes);
  ctx.rawBody = raw;
  if (json) {
    const body = parseJsonObject(raw, host.options.maxJsonDepth);
    ctx.body = body;
    if (typeof body.model === 'string') ctx.model = body.model;
    ctx.stream = body.stream === true;
  }
  return undefined;
}

async function settleTarget(ctx: RequestContext, target: Promise<Target>): Promise<undefined> {
  ctx.target = await target;
  return undefined;
}

const bodyModeOf = (ctx: RequestContext, route: RouteDefinition) => route.body ?? (ctx.method === 'GET' || ctx.method === 'DELETE' ? 'none' : 'json');

/**
 * The lifecycle, listed once, in the order it runs. The entry points are this table less the stages
 * that name them in `skippedBy`; a stage added here runs for every entry point that does not skip it.
 */
export const LIFECYCLE: readonly Stage[] = Object.freeze([
  {
    name: 'request',
    // The gateway's own requests carry their parent's trace ids and metadata.
    skippedBy: ['internal'],
    used: (hooks) => hooks.request.isUsed(),
    run(host, ctx) {
      host.hooks.request.call(ctx);
      return undefined;
    },
  },
  {
    name: 'route',
    // An internal request names its route; its entry point sets it.
    skippedBy: ['internal'],
    run(host, ctx, entry) {
      const routes = host.routes;
      const match = routes.match(ctx.method, ctx.path);
      if (entry === 'detached') {
        // Only a provider route can run without its caller: a handler's answer needs the connection.
        if (match === null || match === 'method_not_allowed' || match.route.kind !== 'provider' || routes.isFallback(match.route)) {
          throw new GatewayError('invalid_request', `POST ${ctx.path} is not a route the gateway can run on its own.`, { param: 'url' });
        }
        host.enter(ctx, match.route);
        ctx.params = match.params;
        return undefined;
      }
      if (match === null) throw new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`);
      if (match === 'method_not_allowed') throw new GatewayError('method_not_allowed', `Method ${ctx.method} is not allowed on ${ctx.path}.`);
      let route = match.route;
      ctx.params = match.params;
      if (routes.defersToFallback(route, ctx)) {
        const fallback = routes.fallbackFor(ctx.method, ctx.path);
        if (fallback !== null) {
          route = fallback;
          ctx.params = null;
        }
      }
      host.enter(ctx, route);
      return undefined;
    },
  },
  {
    name: 'auth',
    // A detached request runs with the auth its work was accepted with; an internal one with its parent's.
    skippedBy: ['internal', 'detached'],
    run(_host, ctx) {
      const auth = ctx.routeHooks!.auth;
      if (auth === null) return undefined;
      return authenticate(auth, ctx);
    },
  },
  {
    name: 'scope',
    // Before the body: a key without the scope learns nothing from how its input would have been judged.
    skippedBy: ['internal', 'detached'],
    run(_host, ctx) {
      const scope = ctx.route!.scope;
      if (scope !== undefined) requireScope(ctx, scope);
      return undefined;
    },
  },
  {
    name: 'body',
    // Both bring their body parsed.
    skippedBy: ['internal', 'detached'],
    run(host, ctx, _entry, req) {
      const mode = bodyModeOf(ctx, ctx.route!);
      if (mode === 'none') return undefined;
      if (mode === 'stream') {
        ctx.bodyStream = req;
        return undefined;
      }
      return readRequestBody(host, ctx, req!, mode === 'json');
    },
  },
  {
    name: 'handler',
    skippedBy: ['internal', 'detached'],
    ends: true,
    run(host, ctx, _entry, req) {
      // Not an async function: a provider route passes through without a promise.
      return ctx.route!.kind === 'handler' ? runHandler(host, ctx, req) : undefined;
    },
  },
  {
    name: 'resolveProvider',
    // An internal request names its target. A detached one brings the target it was accepted with, when it has one.
    skippedBy: ['internal'],
    run(host, ctx) {
      if (ctx.target !== null) return undefined;
      host.refuseUnreadHeaders(ctx);
      // The stage's last tap is the default target (STAGES.resolveProvider.DEFAULT_TARGET): always a target, or a throw.
      const target = ctx.routeHooks!.resolveProvider(ctx);
      if (target instanceof Promise) return settleTarget(ctx, target);
      ctx.target = target;
      return undefined;
    },
  },
  {
    name: 'beforeRequest',
    // A cache's own lookups must not recurse into the cache.
    skippedBy: ['internal'],
    run(_host, ctx) {
      const before = ctx.routeHooks!.beforeRequest;
      return before === null ? undefined : before(ctx);
    },
  },
  {
    name: 'strategy',
    skippedBy: [],
    run(host, ctx, _entry, _req, response) {
      // A before tap answered (a cache hit); or it replaced `ctx.target` (STAGES.beforeRequest.PREPARE), which runs now.
      return response === undefined ? host.runTarget(ctx, ctx.target!, '') : undefined;
    },
  },
  {
    name: 'afterResponse',
    skippedBy: ['internal'],
    run(_host, ctx, _entry, _req, response) {
      const after = ctx.routeHooks!.afterResponse;
      return after === null ? undefined : after(response!, ctx);
    },
  },
  {
    name: 'log',
    skippedBy: [],
    delivered: true,
    used: (hooks) => hooks.log.isUsed(),
    run(host, ctx) {
      const log = (ctx.routeHooks ?? host.unrouted).log;
      if (log === null) return undefined;
      // Never awaited by the response path: a failing sink is logged, the client already has its answer.
      log(ctx).catch(host.logFailed);
      return undefined;
    },
  },
] satisfies Stage[]);

/** One entry point's stages, split at delivery: what makes the answer, and what runs once it was delivered. */
export interface EntryStages {
  readonly answer: readonly Stage[];
  readonly delivered: readonly Stage[];
}

/** The stages an entry point runs: the table less the stages it skips and those with no work in this gateway. */
export function entryStages(entry: EntryPoint, hooks: GatewayHooks, table: readonly Stage[] = LIFECYCLE): EntryStages {
  const runs = table.filter((s) => !s.skippedBy.includes(entry) && (s.used === undefined || s.used(hooks)));
  return { answer: runs.filter((s) => s.delivered !== true), delivered: runs.filter((s) => s.delivered === true) };
}

/**
 * Runs stages in order. Only a stage that returned a promise is awaited, so a synchronous stage costs
 * no turn of the event loop; an answer from an `ends` stage ends the run.
 */
export async function runStages(stages: readonly Stage[], host: StageHost, ctx: RequestContext, entry: EntryPoint, req: IncomingMessage | null): Promise<GatewayResponse | undefined> {
  let response: GatewayResponse | undefined;
  for (let i = 0; i < stages.length; i++) {
    const stage = stages[i]!;
    let result = stage.run(host, ctx, entry, req, response);
    if (result instanceof Promise) result = await result;
    if (result !== undefined) {
      response = result;
      if (stage.ends === true) return response;
    }
  }
  return response;
}

/** Runs the stages that follow delivery (the log hook); synchronous, as none of them is awaited by the answer. */
export function runDelivered(stages: readonly Stage[], host: StageHost, ctx: RequestContext, entry: EntryPoint): void {
  for (let i = 0; i < stages.length; i++) void stages[i]!.run(host, ctx, entry, null, undefined);
}
