import { GatewayError, hasScope, type AuthInfo, type RequestContext } from '../../sdk/index.js';
import type { ApiKeyRow, ControlPlaneRepository } from './repository.js';
import { ALL_SCOPES, ROLE_SCOPES } from './scopes.js';

/**
 * The one rule for acting on another holder of power (docs/security.md, "Keys and roles"):
 * a caller may create, change, rotate or delete a key, or give, change or take a role,
 * only when it holds every scope the other holds and at least its role. Every key route,
 * member route and SCIM group mapping goes through {@link requireAuthority}.
 */

/** Workspace roles, weakest first; an organisation-level caller ranks above them all. */
const RANKS: Readonly<Record<string, number>> = Object.freeze({ none: -1, member: 0, manager: 1, admin: 2, owner: 2 });
/** Rank of an organisation-level caller or key (organisation keys, static keys, auth off). */
const ORGANISATION = 3;

/** Who holds power: its scopes, its role and whether it reaches beyond one workspace. */
export interface Holder {
  scopes: readonly string[];
  /** The workspace role; ignored for organisation-level holders. */
  role: string;
  organisationLevel: boolean;
}

/** The scopes a granted list names, wildcards expanded over the catalogue (`configs.*` → `configs.read`, …). */
export function expandScopes(granted: readonly string[]): string[] {
  const out = new Set<string>();
  for (const g of granted) for (const s of ALL_SCOPES) if (hasScope([g], s)) out.add(s);
  return [...out];
}

/** The first scope of `wanted` (wildcards expanded) that `granted` does not cover, or undefined. */
export function uncoveredScope(granted: readonly string[], wanted: readonly string[]): string | undefined {
  for (const w of wanted) {
    // A named scope outside the catalogue is checked as written (stored keys only hold catalogue scopes).
    const concrete = w.includes('*') ? expandScopes([w]) : [w];
    for (const s of concrete) if (!hasScope(granted, s)) return s;
  }
  return undefined;
}

function rank(holder: Holder): number {
  return holder.organisationLevel ? ORGANISATION : (RANKS[holder.role] ?? -1);
}

function callerOf(auth: AuthInfo): Holder {
  return { scopes: auth.scopes, role: auth.role ?? 'admin', organisationLevel: auth.workspaceId === null };
}

const refuse = (message: string, param: string) => new GatewayError('forbidden', message, { param });

/**
 * Throws a 403 unless the caller holds every scope of `target` and at least its role.
 * `what` says what the caller tried ("rotate this API key"); `param` is the field the
 * refusal names. Requests without auth info (auth off) pass.
 */
export function requireAuthority(ctx: RequestContext, target: Holder, what: string, param: string): void {
  const auth = ctx.auth;
  if (auth === null) return;
  const caller = callerOf(auth);
  if (target.organisationLevel && !caller.organisationLevel) {
    throw refuse(`This API key cannot ${what}: it is organisation-level, and this key belongs to a workspace.`, param);
  }
  if (rank(caller) < rank(target)) {
    throw refuse(`This API key cannot ${what}: that needs at least the "${target.role}" role, and this key acts as "${caller.role}".`, param);
  }
  const missing = uncoveredScope(caller.scopes, target.scopes);
  if (missing !== undefined) throw refuse(`This API key cannot ${what}: that holds the "${missing}" scope, which this key lacks.`, param);
}

/** A caller may only hand out scopes it holds itself (wildcards count as every scope they cover). */
export function requireGrantable(ctx: RequestContext, scopes: readonly string[]): void {
  const granted = ctx.auth?.scopes;
  if (granted === undefined) return;
  const missing = uncoveredScope(granted, scopes);
  if (missing !== undefined) throw refuse(`This API key cannot grant the "${missing}" scope: it does not hold it.`, 'scopes');
}

/** The power a workspace role gives its members: its scopes at its rank. */
export function roleHolder(role: string): Holder {
  return { scopes: ROLE_SCOPES[role] ?? [], role, organisationLevel: false };
}

/**
 * The power a stored key holds: its stored scopes (what it may regain, not only what its
 * owner's role lets it use today) at its type's role: organisation keys are organisation-level,
 * workspace-service keys are managers, user keys their owner's current role.
 */
export async function keyHolder(repo: ControlPlaneRepository, row: ApiKeyRow): Promise<Holder> {
  const scopes = JSON.parse(row.scopes) as string[];
  if (row.workspace_id === null) return { scopes, role: 'admin', organisationLevel: true };
  if (row.type === 'workspace-user' && row.user_id !== null) {
    const member = await repo.member(row.workspace_id, row.user_id);
    return { scopes, role: member?.role ?? 'none', organisationLevel: false };
  }
  return { scopes, role: 'manager', organisationLevel: false };
}

/** Acting on a key: the key itself may always (rotate itself, change its own name); otherwise {@link requireAuthority}. */
export async function requireAuthorityOverKey(ctx: RequestContext, repo: ControlPlaneRepository, row: ApiKeyRow, what: string): Promise<void> {
  if (ctx.auth === null || ctx.auth.keyId === row.id) return;
  requireAuthority(ctx, await keyHolder(repo, row), what, 'id');
}
