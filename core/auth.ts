import type { RequestContext } from './context.js';
import { GatewayError } from './errors.js';

/**
 * Whether `granted` covers `needed`. Scopes are `<resource>.<action>`
 * (`api_keys.rotate`, `logs.read`, `completions.write`); a granted `*`
 * covers everything, `<resource>.*` every action on a resource and
 * `*.<action>` one action on every resource (`*.rotate`).
 */
export function hasScope(granted: readonly string[], needed: string): boolean {
  for (const g of granted) {
    if (g === '*' || g === needed) return true;
    const dot = g.indexOf('.');
    if (dot === -1) continue;
    const resource = g.slice(0, dot);
    const action = g.slice(dot + 1);
    const nd = needed.indexOf('.');
    if (nd === -1) continue;
    if (action === '*' && resource === needed.slice(0, nd)) return true;
    if (resource === '*' && action === needed.slice(nd + 1)) return true;
  }
  return false;
}

/** Throws a 403 naming the scope when the caller lacks it. Requests without auth info (auth off) pass. */
export function requireScope(ctx: RequestContext, scope: string): void {
  const auth = ctx.auth;
  if (auth === null || hasScope(auth.scopes, scope)) return;
  throw new GatewayError('forbidden', `This API key lacks the "${scope}" scope needed for ${ctx.method} ${ctx.path}.`, { param: 'x-gateway-api-key' });
}
