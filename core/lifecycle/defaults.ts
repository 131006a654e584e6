import type { RequestContext } from '../context.js';
import { GatewayError } from '../errors.js';
import type { GatewayHooks } from '../hooks.js';
import { bearerToken } from '../http/headers.js';
import type { Registries } from '../plugin.js';
import type { RouteTable } from '../router.js';
import { STAGES } from '../stages.js';
import type { Target } from '../types.js';
import type { CoreTap } from './route-taps.js';

/**
 * The auth stage's last tap, on routes some authenticator serves: every source was tried in stage
 * order (a tap passes on a request carrying no credential of its kind, so a session cookie is
 * reached when there is no key), none accepted it, so this is the one refusal. A route no
 * authenticator serves (a build without auth) is open, as it has no auth hook at all.
 */
function refuseUnauthenticated(ctx: RequestContext): never {
  const key = ctx.header('x-gateway-api-key');
  const message = key === undefined || key === '' ? 'Missing gateway API key: send it in the x-gateway-api-key header.' : 'Missing or unknown gateway API key (x-gateway-api-key).';
  throw new GatewayError('unauthorized', message, { param: 'x-gateway-api-key' });
}

/**
 * Whether requests go to the only provider by default: one provider and no resolver plugin at all
 * (the minimal build). Decided once, on first use, which is after boot.
 */
export function onlyProviderRule(registries: Registries, hooks: GatewayHooks): () => string | null {
  let only: string | null | undefined;
  return () => (only ??= registries.providers.size === 1 && !hooks.resolveProvider.isUsed() ? registries.providers.names()[0]! : null);
}

/**
 * The resolveProvider stage's last tap: no plugin chose a target. The minimal build sends everything
 * to its one provider, with the client's bearer token as its key; otherwise the client must choose
 * (and an unknown path under the generic proxy's prefix is a 404 rather than a choice to make).
 */
function defaultTarget(routes: RouteTable, onlyProvider: () => string | null): (ctx: RequestContext) => Target {
  return (ctx) => {
    const only = onlyProvider();
    if (only !== null) return { provider: only, api_key: bearerToken(ctx.headers) };
    if (ctx.route !== null && routes.isFallback(ctx.route)) {
      throw new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}, and no provider was selected to proxy it to (x-gateway-provider).`);
    }
    throw new GatewayError('provider_required', 'No provider selected. Send x-gateway-provider (and Authorization: Bearer <provider key>) or x-gateway-config.', {
      param: 'x-gateway-provider',
    });
  };
}

/** The core's own taps, at their named stages (`STAGES.auth.REFUSE`, `STAGES.resolveProvider.DEFAULT_TARGET`); added by `createGateway`. */
export function coreTaps(routes: RouteTable, onlyProvider: () => string | null): CoreTap[] {
  return [
    { hook: 'auth', name: 'core:unauthorized', stage: STAGES.auth.REFUSE, fn: refuseUnauthenticated, when: 'withPluginTaps' },
    { hook: 'resolveProvider', name: 'core:default-target', stage: STAGES.resolveProvider.DEFAULT_TARGET, fn: defaultTarget(routes, onlyProvider), when: 'always' },
  ];
}
