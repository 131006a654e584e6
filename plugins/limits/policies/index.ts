import { GatewayError, migrate, type PluginAPI, type RouteDefinition } from '../../../sdk/index.js';
import { IDENTITY, toRouteDefinitions } from '../../../sdk/admin/index.js';
import { LIMIT_POLICIES_MIGRATIONS, LIMIT_POLICIES_NAMESPACE } from './migrations.js';
import { policyRoutes } from './routes.js';
import { PolicyStore, type LimitCounters } from './service.js';

export { PolicyStore, type LimitCounters, type LimitGroupUsage } from './service.js';

/**
 * The policies workspaces keep in the control plane's store, when the control
 * plane is loaded (else nothing: the server config's policies alone apply):
 * their table, migrated when the gateway gets ready, and their admin routes
 * (`/v1/policies/rate-limits`, `/v1/policies/usage-limits`). At boot only.
 * Returns the store, null until ready or without the control plane.
 */
export function storedPolicies(api: PluginAPI, counters: LimitCounters): () => PolicyStore | null {
  if (!api.provided(IDENTITY)) return () => null;
  let store: PolicyStore | null = null;
  api.onReady(async () => {
    const identity = api.resolve(IDENTITY);
    await migrate(identity.sql(), LIMIT_POLICIES_NAMESPACE, LIMIT_POLICIES_MIGRATIONS);
    store = new PolicyStore(identity, counters);
  });
  const served = () => store!.identity.adminRoutes;
  for (const route of toRouteDefinitions(api.options.basePath, policyRoutes, () => store!)) api.routes.add(whenServed(route, served));
  return () => store;
}

/**
 * A route that is there only when the control plane serves its admin API (its
 * `routes` option, known once the gateway is ready): else the generic proxy
 * serves the request, or it is the 404 of a path no route matches.
 */
function whenServed(route: RouteDefinition, served: () => boolean): RouteDefinition {
  const handler = route.handler!;
  return {
    ...route,
    deferToFallback: () => !served(),
    handler: (ctx) => (served() ? handler(ctx) : Promise.reject(new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`))),
  };
}
