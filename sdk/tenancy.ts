import { serviceToken, stateKey, type PluginAPI, type RequestContext } from '../core/index.js';

/**
 * Who a request's shared state belongs to (docs/security.md, "Tenant isolation"): the workspace it
 * acts in. The `control-plane` plugin provides it: a workspace key's own workspace; an
 * organisation-level or static key's the one `x-gateway-workspace` names, else the default one.
 * A build without a control plane has no workspaces: its tenant is the key's `workspaceId` when an
 * auth plugin set one, else the one tenant `''`.
 */
export interface TenancyService {
  /** The id of the workspace `ctx` acts in, or null when it acts in none; without a promise when known. */
  workspaceOf(ctx: RequestContext): string | null | Promise<string | null>;
}
/** The {@link TenancyService} service (offered by the `control-plane` plugin). */
export const TENANCY = serviceToken<TenancyService>('gateway.tenancy', 'control-plane');

/** A request's tenant once known, so each request asks the control plane once. */
const TENANT = stateKey<string>('tenant');

/**
 * The tenant of a request when something asked for it already ({@link tenantOf}), else undefined:
 * for a synchronous reader (a log line) that must not start a lookup itself.
 */
export function knownTenant(ctx: RequestContext): string | undefined {
  while (ctx.parent !== null) ctx = ctx.parent;
  return ctx.get(TENANT);
}

/** The tenant of a request with no workspace. */
export const NO_TENANT = '';

/**
 * Reads a request's tenant: the workspace id it acts in, `''` for none. Every plugin that keeps
 * state between requests (counters, caches, what it learnt of a target) puts the tenant in its keys,
 * so that nothing one workspace does changes what another sees. Call at `apply`; the function it
 * returns answers without a promise when the tenant is known (most requests: cached workspaces).
 * A refusal the lookup raises (`x-gateway-workspace` naming no workspace: 404) is the request's.
 */
export function tenantOf(api: PluginAPI): (ctx: RequestContext) => string | Promise<string> {
  let service: TenancyService | undefined;
  api.onReady(() => {
    service = api.tryResolve(TENANCY);
  });
  const keep = (ctx: RequestContext, id: string | null): string => {
    const tenant = id ?? NO_TENANT;
    ctx.set(TENANT, tenant);
    return tenant;
  };
  return (request) => {
    // An internal request (an embedding for the semantic cache) belongs to the client's request it serves.
    let ctx = request;
    while (ctx.parent !== null) ctx = ctx.parent;
    const known = ctx.get(TENANT);
    if (known !== undefined) return known;
    if (service === undefined) return keep(ctx, ctx.auth?.workspaceId ?? null);
    const id = service.workspaceOf(ctx);
    return id instanceof Promise ? id.then((w) => keep(ctx, w)) : keep(ctx, id);
  };
}
