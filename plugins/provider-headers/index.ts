import {
  bearerToken,
  GatewayError,
  type GatewayPlugin,
  HEADER_TARGETS,
  parseOptions,
  type Provider,
  type Registry,
  type RequestContext,
  STAGES,
  type Target,
  type UpstreamClient,
  upstreamUrlProblem,
} from '../../sdk/index.js';
import * as v from 'valibot';

export const PLUGIN_NAME = 'provider-headers';

/** No options: which hosts a custom host may name is the gateway's outbound policy (`GatewayOptions.outbound`). */
const OptionsSchema = v.strictObject({});

export type ProviderHeadersOptions = v.InferInput<typeof OptionsSchema>;

/**
 * Selects the provider from request headers (spec, Authentication):
 * `x-gateway-provider` names it, `Authorization: Bearer` carries its key,
 * `x-gateway-custom-host` replaces its base URL, and
 * `x-gateway-openai-organization` / `x-gateway-openai-project` (or the
 * OpenAI SDK's own `OpenAI-Organization` / `OpenAI-Project`) scope it.
 * Offers the same selection under `HEADER_TARGETS`, for configs that leave
 * the provider to the request (`passthrough`).
 */
export function providerHeaders(options: ProviderHeadersOptions = {}): GatewayPlugin {
  parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    // Routing headers it reads: without a plugin that does, a request sending one is refused (core/routing-headers.ts).
    headers: ['x-gateway-provider', 'x-gateway-virtual-key', 'x-gateway-custom-host'],
    state: [],
    apply(api) {
      api.provide(HEADER_TARGETS, { fromHeaders: (ctx) => targetFromHeaders(ctx, api.providers, api.upstream) });
      api.hooks.resolveProvider.tap({ name: PLUGIN_NAME, stage: STAGES.resolveProvider.HEADERS }, (ctx) => targetFromHeaders(ctx, api.providers, api.upstream));
    },
  };
}

/**
 * The target the request's own headers select (`x-gateway-provider`, or the
 * legacy `x-gateway-virtual-key`), or undefined when they name none. Also used
 * by configs with `passthrough: true`. A custom host the outbound policy
 * refuses by its address is a 400 here, before anything else runs.
 */
export function targetFromHeaders(ctx: RequestContext, providers: Registry<Provider>, upstream: Pick<UpstreamClient, 'checkUrl'>): Target | undefined {
  const name = ctx.header('x-gateway-provider');
  const virtualKey = ctx.header('x-gateway-virtual-key');
  let target: Target;
  if (name !== undefined && name !== '') {
    // A slug (`@name`) is resolved later by the provider registry, with its credentials.
    if (!name.startsWith('@') && !providers.has(name)) {
      throw new GatewayError('unknown_provider', `Unknown provider "${name}". Known providers: ${providers.names().join(', ')}.`, { param: 'x-gateway-provider' });
    }
    target = { provider: name };
  } else if (virtualKey !== undefined && virtualKey !== '') {
    target = { virtual_key: virtualKey };
  } else {
    return undefined;
  }
  // A slug or virtual key carries its own credential; the SDK's Authorization header (often a dummy) must not replace it.
  const key = target.provider !== undefined && !target.provider.startsWith('@') ? bearerToken(ctx.headers) : undefined;
  if (key !== undefined) target.api_key = key;
  const host = ctx.header('x-gateway-custom-host');
  if (host !== undefined && host !== '') target.custom_host = checkHost(host, upstream);
  copyHeader(ctx, target, 'openai_organization', 'x-gateway-openai-organization', 'openai-organization');
  copyHeader(ctx, target, 'openai_project', 'x-gateway-openai-project', 'openai-project');
  return target;
}

function copyHeader(ctx: RequestContext, target: Target, field: string, ...names: string[]): void {
  for (const name of names) {
    const value = ctx.header(name);
    if (value !== undefined && value !== '') {
      target[field] = value;
      return;
    }
  }
}

/** A custom host must be an absolute http(s) URL without user info, and an address the outbound policy allows; it becomes the provider's base URL. */
function checkHost(raw: string, upstream: Pick<UpstreamClient, 'checkUrl'>): string {
  const problem = upstreamUrlProblem(raw);
  if (problem !== null) throw new GatewayError('invalid_header', `x-gateway-custom-host ${problem}.`, { param: 'x-gateway-custom-host' });
  upstream.checkUrl(raw, 'x-gateway-custom-host');
  return raw;
}

export default providerHeaders;
