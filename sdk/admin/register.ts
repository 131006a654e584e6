import { GatewayError, type PluginAPI } from '../../core/index.js';
import { toRouteDefinitions, type AdminRoute } from './http.js';
import { IDENTITY, type Identity } from './identity.js';

/**
 * Registers a feature's admin routes beside the control plane's: only when a
 * loaded plugin provides {@link IDENTITY} (known before any `apply`), and
 * served only while the control plane serves its own (`identity.adminRoutes`,
 * its `routes` option, known once ready). Otherwise a request goes where it
 * went without them: the generic proxy when it would take the path, else the
 * 404 of an unknown route.
 *
 * @param identity the resolved identity (undefined until ready)
 */
export function registerAdminRoutes<S>(api: PluginAPI, routes: readonly AdminRoute<S>[], service: () => S, identity: () => Identity | undefined): void {
  if (!api.provided(IDENTITY)) return;
  const off = () => identity()?.adminRoutes !== true;
  for (const route of toRouteDefinitions(api.options.basePath, routes, service)) {
    const { deferToFallback: defer, handler } = route;
    api.routes.add({
      ...route,
      deferToFallback: (ctx) => off() || (defer?.(ctx) ?? false),
      handler: (ctx) => (off() ? Promise.reject(new GatewayError('not_found', `Unknown route ${ctx.method} ${ctx.path}.`)) : handler!(ctx)),
    });
  }
}
