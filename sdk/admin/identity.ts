import { GatewayError, serviceToken, type RequestContext } from '../../core/index.js';
import type { SecretBox } from '../secret-box.js';
import type { SqlClient } from '../sql.js';
import { notFound } from './http.js';

/** A workspace as features see it. */
export interface WorkspaceInfo {
  /** The workspace's id. */
  readonly id: string;
  /** Its slug, unique in the organisation. */
  readonly slug: string;
  /** Its name, for people. */
  readonly name: string;
  /** `active`, or `archived`. */
  readonly status: string;
}

/** The organisation's settings (`PUT /v1/organisation/settings`). */
export interface OrgSettings {
  /** The rotation period every user key gets. */
  user_api_key_rotation_period: 'weekly' | 'monthly' | null;
  /** Whether a new member gets a user key. */
  user_api_key_auto_create: boolean;
  /** How long, in seconds, a person's sign-in (a session, a JWT from `iat`) lasts at most. */
  session_settings: { max_session_ttl: number | null };
}

/**
 * Who is who, for the features that keep state per workspace (stored configs,
 * guardrails, prompts, limits, integrations, MCP servers, agents). The
 * `control-plane` plugin provides it under {@link IDENTITY}: the organisation,
 * its workspaces and members, and the store and encryption key every feature's
 * tables and secrets share. Features depend on identity, never the reverse.
 */
export interface Identity {
  /** The clock (tests set it). */
  now(): number;
  /** How long a request path cache may trust what it read, in ms (`cacheTtlMs`). */
  readonly cacheTtlMs: number;
  /** Whether admin routes are served (the control plane's `routes` option): a feature registers its own only then. */
  readonly adminRoutes: boolean;
  /** The SQL client of the control plane's store: features keep their tables beside identity's. Valid once the gateway is ready. */
  sql(): SqlClient;
  /** Seals and opens the secrets of stored resources (AES-256-GCM under the gateway's encryption key). Valid once ready. */
  readonly box: SecretBox;
  /** The organisation's id (every stored resource carries it). */
  organisationId(): Promise<string>;
  /** A workspace by id or slug, through the identity cache; null when there is none. */
  workspace(idOrSlug: string): WorkspaceInfo | null | Promise<WorkspaceInfo | null>;
  /**
   * The workspace a request acts in: the key's own, or for an organisation-level key the one named
   * by `x-gateway-workspace`, else the default workspace; null when there is none (a 404 when the
   * header names one that does not exist).
   */
  requestWorkspace(ctx: RequestContext): Promise<string | null>;
  /** The organisation's settings, through the identity cache. */
  settings(): OrgSettings | Promise<OrgSettings>;
  /** A user's role in a workspace (`admin`, `manager`, `member`), or null when not a member. */
  memberRole(workspaceId: string, userId: string): Promise<string | null>;
  /** Drops every cached lookup of identity and of every feature that listens: call after each admin write. */
  invalidate(): void;
  /** Runs `listener` on every {@link invalidate} (a feature's caches clear with identity's). At boot only. */
  onInvalidate(listener: () => void): void;
}

/** The control plane's {@link Identity}. */
export const IDENTITY = serviceToken<Identity>('gateway.identity', 'control-plane');

/**
 * The workspace a workspace-scoped write or list acts on: a workspace key's
 * own (naming another is a 404, as if it did not exist), or for an
 * organisation key the one named (`named`, else `x-gateway-workspace`), else
 * the default workspace. An archived workspace is a 400.
 */
export async function workspaceFor(ctx: RequestContext, identity: Identity, named: string | null | undefined, param = 'workspace_id'): Promise<string> {
  const own = ctx.auth?.workspaceId ?? null;
  if (own !== null) {
    if (named !== undefined && named !== null && named !== own) {
      const ws = await identity.workspace(named);
      if (ws === null || ws.id !== own) throw notFound('workspace', named, param);
    }
    return own;
  }
  const header = ctx.header('x-gateway-workspace');
  if ((named === undefined || named === null) && header !== undefined && header !== '') {
    named = header;
    param = 'x-gateway-workspace';
  }
  const ws = await identity.workspace(named ?? 'default');
  if (ws === null) throw notFound('workspace', named ?? 'default', param);
  if (ws.status !== 'active') throw new GatewayError('invalid_request', `Workspace "${ws.slug}" is archived.`, { param });
  return ws.id;
}

/**
 * The workspace a request acts in, as {@link Identity.requestWorkspace} finds it, but without a
 * promise when the workspace is cached, for the request path: the key's own; for an
 * organisation-level key the one `x-gateway-workspace` names (a 404 when no active one has that id
 * or slug), else the default workspace; null when there is none. An internal request acts in its
 * parent's.
 */
export function requestWorkspaceOf(ctx: RequestContext, identity: Pick<Identity, 'workspace'>): string | null | Promise<string | null> {
  // An internal request (an embedding for the semantic cache) acts where the client's request it serves acts.
  while (ctx.parent !== null) ctx = ctx.parent;
  const own = ctx.auth?.workspaceId;
  if (own) return own;
  const named = ctx.header('x-gateway-workspace');
  const pick = (ws: WorkspaceInfo | null): string | null => {
    if (ws !== null && ws.status === 'active') return ws.id;
    if (named !== undefined && named !== '') throw new GatewayError('not_found', `No workspace "${named.slice(0, 64)}".`, { param: 'x-gateway-workspace' });
    return null;
  };
  const found = identity.workspace(named !== undefined && named !== '' ? named : 'default');
  return found instanceof Promise ? found.then(pick) : pick(found);
}
