import { createHash } from 'node:crypto';
import type { RequestContext, Target } from '../core/index.js';

/**
 * The digest of a target's credentials (the declared credential `fields`),
 * computed once per target object: configs are parsed once and reused, and a
 * service account JSON is kilobytes.
 */
export function credentialDigest(fields: readonly string[]): (target: Target) => string {
  const known = new WeakMap<Target, string>();
  return (target) => {
    let digest = known.get(target);
    if (digest === undefined) {
      const hash = createHash('sha256');
      for (const field of fields) {
        const value = target[field];
        if (value !== undefined) hash.update(`${field}=${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
      }
      digest = hash.digest('hex');
      known.set(target, digest);
    }
    return digest;
  };
}

/**
 * Identity of a target as called: the tenant (the workspace the request acts in, sdk/tenancy.ts),
 * provider, base URL, model, and the digest of its credentials; a secret enters only through the
 * digests. Give it the resolved target (`ctx.resolvedTarget`, `api.resolveLeaf`): a `@slug` is a
 * name each workspace chooses, and two workspaces' `@main` are different deployments. The breaker
 * keys its state by it, and the routing plugin what it knows of a target.
 */
export function targetIdentity(ctx: RequestContext, target: Target, credentials: (target: Target) => string, tenant: string): string {
  // A caller written before identities carried the tenant would key every workspace's state alike: refused, not guessed.
  if (typeof tenant !== 'string') throw new TypeError('targetIdentity(ctx, target, credentials, tenant): the tenant is required (tenantOf(api) gives it; docs/security.md, "Declaring state")');
  const provider = target.provider ?? '';
  const host = typeof target.custom_host === 'string' ? target.custom_host : '';
  const override = target.override_params as Record<string, unknown> | undefined;
  const model = (override?.model as string | undefined) ?? ctx.model ?? '';
  return createHash('sha256').update(`${tenant}\n${provider}\n${host}\n${model}\n${credentials(target)}`).digest('hex').slice(0, 32);
}
