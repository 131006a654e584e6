import { type AuthInfo, GatewayError } from '../../sdk/index.js';
import { JwtError, type JwtPayload, type JwtVerifier } from './jwt.js';
import { capScopes, isKnownScope, ROLE_SCOPES } from './scopes.js';
import type { ControlPlane } from './service.js';

/** Which claims carry the workspace, scopes, role and user. */
export interface JwtClaims {
  workspace: string;
  scopes: string;
  role: string;
  subject: string;
}

export const DEFAULT_CLAIMS: JwtClaims = Object.freeze({ workspace: 'workspace_id', scopes: 'scope', role: 'role', subject: 'sub' });

const unauthorized = (message: string) => new GatewayError('unauthorized', message, { param: 'x-gateway-api-key' });

/**
 * Authenticates a JWT sent as the gateway key: verified against the
 * configured keys (`verify`), then mapped to a workspace (id or slug), a role
 * and scopes. Scopes are capped by the role, so a token can never do more than
 * its role allows. The organisation's `session_settings.max_session_ttl`
 * bounds the session's age, counted from `iat`.
 */
export async function authenticateJwt(cp: ControlPlane, verify: JwtVerifier, claims: JwtClaims, token: string): Promise<AuthInfo> {
  let payload: JwtPayload;
  try {
    payload = await verify(token);
  } catch (err) {
    if (err instanceof JwtError) throw unauthorized(`Invalid JWT (${err.code}): ${err.message}`);
    throw err;
  }
  const wsRef = payload[claims.workspace];
  if (typeof wsRef !== 'string' || wsRef === '') throw unauthorized(`Invalid JWT (missing_claim): the "${claims.workspace}" claim must name a workspace.`);
  const ws = await cp.workspace(wsRef);
  if (ws === null) throw unauthorized(`Invalid JWT: the "${claims.workspace}" claim names no workspace ("${wsRef.slice(0, 64)}").`);
  if (ws.status !== 'active') throw new GatewayError('forbidden', `The workspace "${ws.slug}" of this token is archived.`, { param: 'x-gateway-api-key' });

  const rawRole = payload[claims.role];
  const role = rawRole === undefined ? 'member' : typeof rawRole === 'string' ? rawRole.toLowerCase() : '';
  const allowed = ROLE_SCOPES[role];
  if (allowed === undefined) throw unauthorized(`Invalid JWT: the "${claims.role}" claim must be "admin", "manager" or "member".`);

  const rawScopes = payload[claims.scopes];
  let scopes: readonly string[];
  if (rawScopes === undefined) scopes = allowed;
  else if (typeof rawScopes === 'string') scopes = rawScopes.split(' ').filter((s) => s !== '');
  else if (Array.isArray(rawScopes) && rawScopes.every((s) => typeof s === 'string')) scopes = rawScopes as string[];
  else throw unauthorized(`Invalid JWT: the "${claims.scopes}" claim must be a space-separated string or an array of strings.`);
  scopes = capScopes(scopes.filter(isKnownScope), allowed);

  const ttl = (await cp.settings()).session_settings.max_session_ttl;
  if (ttl !== null) {
    const iat = payload.iat;
    if (typeof iat !== 'number') throw unauthorized('Invalid JWT (missing_claim): the organisation limits session age (max_session_ttl), so the token needs an "iat" claim.');
    const ageS = cp.now() / 1000 - iat;
    if (ageS > ttl) {
      throw unauthorized(
        `Session expired: it started at ${new Date(iat * 1000).toISOString()}, more than the organisation's max_session_ttl of ${ttl} seconds ago. Sign in again for a new token.`,
      );
    }
  }
  const sub = payload[claims.subject];
  const userId = typeof sub === 'string' ? sub : null;
  return Object.freeze({ keyId: `jwt:${(userId ?? 'anonymous').slice(0, 128)}`, workspaceId: ws.id, scopes: Object.freeze([...scopes]), role, type: 'jwt', userId });
}
