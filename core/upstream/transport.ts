import { performance } from 'node:perf_hooks';
import type { RequestContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { forwardableHeaders, isForwardable } from '../http/headers.js';
import type { Registry } from '../registry.js';
import type { Attempt, Dispatch, GatewayResponse, Provider, RouteTranslation, Target, UpstreamRequest, UpstreamResponse } from '../types.js';
import { upstreamBodyError, type UpstreamClient } from './client.js';

/**
 * The innermost dispatch: builds the upstream request from the target's
 * provider adapter (or, for a front door the provider does not speak, its
 * adapter for the route's `via` on the translated body; or the route's own
 * forwarder, for the generic proxy),
 * adds the headers the target forwards and the request's upstream headers,
 * lets the provider prepare it (sign, add a token), sends it through the
 * pooled client and maps the answer back.
 */
export function createTransport(providers: Registry<Provider>, client: UpstreamClient): Dispatch {
  return async (ctx: RequestContext, target: Target): Promise<GatewayResponse> => {
    const name = target.provider;
    if (name === undefined) {
      throw new GatewayError('provider_required', 'The target names no provider.', { param: 'provider' });
    }
    const provider = providers.require(name, 'provider');
    ctx.provider = provider;
    const route = ctx.route!;
    // Cleared first: `accepts` reads the body this leaf sends (effectiveBody), never the one an earlier leaf of a fallback sent.
    ctx.upstreamBody = null;
    let adapter = provider.routes[route.api ?? route.name];
    if (adapter?.accepts !== undefined && !adapter.accepts(ctx, target)) adapter = undefined;
    // A front door the provider does not speak goes through its adapter for another route, translated both ways.
    let via: RouteTranslation | undefined;
    if (adapter === undefined && route.via !== undefined) {
      const other = provider.routes[route.via.route];
      if (other !== undefined && (other.accepts === undefined || other.accepts(ctx, target))) {
        via = route.via;
        ctx.upstreamBody = via.request(ctx, target);
        adapter = other;
      }
    } else if (adapter !== undefined && route.via?.native !== undefined) {
      ctx.upstreamBody = route.via.native(ctx, target);
    }

    let request: UpstreamRequest;
    if (adapter !== undefined) {
      const headers = provider.authHeaders(target, ctx);
      headers['content-type'] = 'application/json';
      if (adapter.headers !== undefined) Object.assign(headers, adapter.headers(ctx, target));
      const body = adapter.body !== undefined ? adapter.body(ctx, target) : requestBody(ctx, target);
      request = {
        method: via === undefined ? route.method : 'POST',
        url: baseURL(target, provider, ctx) + (typeof adapter.path === 'string' ? adapter.path : adapter.path(ctx, target)),
        headers,
        // Only a body that needs I/O first is a promise; the others cost no await.
        body: body instanceof Promise ? await body : body,
      };
    } else if (route.local !== undefined) {
      return route.local(ctx, target);
    } else if (route.forward !== undefined) {
      request = route.forward(ctx, target, provider);
    } else {
      const api = route.api ?? route.name;
      const able = providers.names().filter((n) => providers.get(n)?.routes[api] !== undefined);
      throw new GatewayError('route_not_supported', `Provider "${provider.name}" does not support ${route.name}${able.length === 0 ? '' : `; providers that do: ${able.join(', ')}`}.`, { param: 'provider' });
    }

    const forward = target.forward_headers;
    if (Array.isArray(forward)) forwardHeaders(ctx, forward as string[], request.headers);
    if (ctx.upstreamHeaders !== null) Object.assign(request.headers, ctx.upstreamHeaders);
    if (provider.prepare !== undefined) await provider.prepare(request, target, ctx);

    const started = performance.now();
    let upstream: UpstreamResponse;
    try {
      upstream = await client.send(request, ctx.upstreamSignal);
    } catch (err) {
      record(ctx, provider, null, started, err, via);
      throw err;
    }
    record(ctx, provider, upstream.status, started, null, via);
    try {
      const answer = adapter?.response === undefined ? passThrough(upstream) : await adapter.response(upstream, ctx, target);
      return via === undefined ? answer : await via.response(answer, ctx, target);
    } catch (err) {
      // An adapter that reads the body whole (to translate it) meets a stalled or broken upstream here: a 504 or 502, not a 500.
      throw upstreamBodyError(err) ?? err;
    }
  };
}

/**
 * The base URL a target's calls go to: the provider's function of the target,
 * or else `custom_host` when set, else the provider's default; never with a
 * trailing slash.
 */
export function baseURL(target: Target, provider: Provider, ctx: RequestContext): string {
  const base = provider.baseURL;
  if (typeof base === 'function') return base(target, ctx);
  const custom = target.custom_host;
  if (typeof custom === 'string' && custom !== '') return custom.endsWith('/') ? custom.slice(0, -1) : custom;
  return base;
}

/** The target's `override_params`, when it has any. */
function overrides(target: Target): Record<string, unknown> | null {
  const o = target.override_params;
  return o !== null && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).length > 0 ? (o as Record<string, unknown>) : null;
}

/**
 * The request body as this target should see it: `override_params` over the client's body, or,
 * for a translated front-door attempt, the translated body (built from the former).
 */
export function effectiveBody(ctx: RequestContext, target: Target): Record<string, unknown> | null {
  if (ctx.upstreamBody !== null) return ctx.upstreamBody;
  const o = overrides(target);
  if (o === null || ctx.body === null) return ctx.body;
  return { ...ctx.body, ...o };
}

/** The body to send: the client's own bytes, unless a plugin changed the parsed body or the target overrides parameters. */
export function requestBody(ctx: RequestContext, target?: Target): Buffer | string | null {
  if (ctx.upstreamBody !== null) return JSON.stringify(ctx.upstreamBody);
  if (target !== undefined && ctx.body !== null && overrides(target) !== null) return JSON.stringify(effectiveBody(ctx, target));
  if (ctx.bodyChanged && ctx.body !== null) return JSON.stringify(ctx.body);
  return ctx.rawBody;
}

/**
 * Client headers a target forwards as received (`forward_headers`). The
 * gateway key is never among them, nor a framing or hop-by-hop header: the
 * config schema refuses those, and a target built another way (a plugin's)
 * still cannot make the request contradict its own body.
 */
export function forwardHeaders(ctx: RequestContext, names: readonly string[], into: Record<string, string>): void {
  for (const raw of names) {
    const name = raw.toLowerCase();
    if (name === 'x-gateway-api-key' || !isForwardable(name)) continue;
    const value = ctx.headers[name];
    if (value !== undefined) into[name] = Array.isArray(value) ? value.join(', ') : value;
  }
}

/** Status, headers (minus hop-by-hop) and body bytes exactly as the upstream sent them. */
export function passThrough(upstream: UpstreamResponse): GatewayResponse {
  return { status: upstream.status, headers: forwardableHeaders(upstream.headers), body: upstream.body, observers: null };
}

function record(ctx: RequestContext, provider: Provider, status: number | null, started: number, err: unknown, via: RouteTranslation | undefined): void {
  const latency = performance.now() - started;
  ctx.upstreamLatencyMs = (ctx.upstreamLatencyMs ?? 0) + latency;
  const attempt: Attempt = {
    target: ctx.targetPath ?? '0',
    provider: provider.name,
    status,
    startMs: started - ctx.startedAt,
    latencyMs: latency,
    error: err === null ? null : err instanceof GatewayError ? err.code : (err as Error)?.name ?? 'error',
  };
  if (via !== undefined) attempt.via = via.route;
  ctx.attempts.push(attempt);
}
