import { baseURL, type GatewayPlugin, HOP_BY_HOP, type Provider, type RequestContext, type RouteDefinition, type Target, type UpstreamRequest } from '../../sdk/index.js';

export const PLUGIN_NAME = 'proxy';

/**
 * `x-gateway-proxy: true` (case-insensitive) sends a request to the proxy even when the gateway serves the path
 * itself (`/v1/logs`, `/v1/configs`, …), so no provider endpoint is out of reach (spec: "No provider endpoint is
 * excluded"). Any other value, or none, leaves routing as it is. Like every `x-gateway-*` header, never forwarded.
 */
export const PROXY_HEADER = 'x-gateway-proxy';
const claims = (ctx: RequestContext): boolean => ctx.header(PROXY_HEADER)?.trim().toLowerCase() === 'true';

/** Client headers never sent upstream: the gateway's own, the client's credential (replaced by the provider's), and framing. */
const DROPPED = new Set(['host', 'content-length', 'authorization', 'cookie', 'x-api-key', 'api-key', 'x-goog-api-key']);

/**
 * The generic proxy (spec, Generic proxy): any path under the base path that
 * no shaped route serves is sent to the selected provider's base URL with the
 * same method, path, query and body; the answer comes back as received. With
 * `x-gateway-proxy: true`, so is a path the gateway serves itself.
 */
export function proxy(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    // Routing headers it reads: without a plugin that does, a request sending one is refused (core/routing-headers.ts).
    headers: [PROXY_HEADER],
    state: [],
    apply(api) {
      const prefix = api.options.basePath;
      const route: RouteDefinition = {
        name: 'proxy',
        method: 'POST',
        path: prefix + '/*',
        kind: 'provider',
        body: 'raw',
        doc: {
          summary: 'Forward to the selected provider',
          description:
            'For what the gateway has no route of its own (`/v1/models` of a provider, images, audio, moderations, …). ' +
            "The gateway's headers (`x-gateway-*`) and the client's credentials are not forwarded; the provider's key is. " +
            'With `x-gateway-proxy: true`, a path the gateway serves itself (`/v1/logs`, `/v1/configs`, `/v1/files`, …) is forwarded too, verbatim.',
          tags: ['Proxy'],
          scope: 'completions.write',
          responseTypes: ['application/json', 'text/event-stream', 'application/octet-stream'],
        },
        forward: (ctx, target, provider) => forward(ctx, target, provider, prefix.length),
      };
      api.routes.setFallback(prefix + '/', ['GET', 'POST', 'PUT', 'DELETE'], route, claims);
    },
  };
}

function forward(ctx: RequestContext, target: Target, provider: Provider, prefixLength: number): UpstreamRequest {
  const headers: Record<string, string> = {};
  for (const name in ctx.headers) {
    if (HOP_BY_HOP.has(name) || DROPPED.has(name) || name.startsWith('x-gateway-')) continue;
    const value = ctx.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  Object.assign(headers, provider.authHeaders(target, ctx));
  const body = ctx.rawBody !== null && ctx.rawBody.length > 0 ? ctx.rawBody : null;
  return {
    method: ctx.method,
    url: baseURL(target, provider, ctx) + ctx.path.slice(prefixLength) + (ctx.query === '' ? '' : `?${ctx.query}`),
    headers,
    body,
  };
}

export default proxy;
