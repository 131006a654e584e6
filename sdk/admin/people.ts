import * as v from 'valibot';
import { serviceToken, type RequestContext } from '../../core/index.js';
import type { SqlClient } from '../sql.js';

/** A person the gateway knows (a user: members, people signed in or provisioned), as features see them. */
export interface UserInfo {
  /** The user's id. */
  readonly id: string;
  /** Lower case; people are known by email across the gateway. */
  readonly email: string;
  /** The name to show; null when none is known. */
  readonly name: string | null;
}

/** A workspace a person belongs to, with their role there. */
export interface UserWorkspace {
  /** The workspace's id. */
  readonly workspaceId: string;
  /** The workspace's slug. */
  readonly slug: string;
  /** The workspace's name. */
  readonly name: string;
  /** The person's role there: `admin`, `manager` or `member`. */
  readonly role: string;
}

/** A user key a write turned off, and its workspace. */
export interface DisabledKey {
  /** The key's id. */
  readonly id: string;
  /** The key's workspace; null for an organisation-level key. */
  readonly workspaceId: string | null;
}

/** The workspace roles, strongest first: an admin can do what a manager can, a manager what a member can. */
export const ROLES = ['admin', 'manager', 'member'] as const;

/** A workspace role in a request body: `admin`, `manager` or `member`, in any case. */
export const Role = v.pipe(
  v.string(),
  v.description('`admin`, `manager` or `member`, in any case.'),
  v.transform((s) => s.toLowerCase()),
  v.picklist(ROLES, 'must be "admin", "manager" or "member"'),
);

/**
 * People and their access, for the features that sign people in (`sso`) or
 * provision them from an identity provider (`scim`). The `control-plane`
 * plugin provides it under {@link IDENTITY_ADMIN}: users, their workspace
 * memberships and their user keys are identity's tables, changed only here.
 * A method that takes `tx` runs in the caller's transaction (one opened on
 * `Identity.sql()`); without it, on its own. Writes do not clear caches: call
 * `Identity.invalidate()` once the transaction committed.
 */
export interface IdentityAdmin {
  /** The user with this id, or null. */
  user(id: string, tx?: SqlClient): Promise<UserInfo | null>;
  /** The user with this email (lower case), or null. */
  userByEmail(email: string, tx?: SqlClient): Promise<UserInfo | null>;
  /** Creates a user (a member of no workspace yet). */
  createUser(email: string, name: string | null, tx?: SqlClient): Promise<UserInfo>;
  /** Sets a user's email and name. */
  updateUser(id: string, fields: { email: string; name: string | null }, tx?: SqlClient): Promise<void>;

  /** The active workspaces a user belongs to, oldest membership first, through the identity cache (the request path's read). */
  userWorkspaces(userId: string): readonly UserWorkspace[] | Promise<readonly UserWorkspace[]>;
  /** Every membership of a user (archived workspaces too): workspace id → role. */
  memberRoles(userId: string, tx?: SqlClient): Promise<Map<string, string>>;
  /** Makes a user a member of a workspace with a role. */
  addMember(workspaceId: string, userId: string, role: string, tx?: SqlClient): Promise<void>;
  /** Changes a member's role. */
  changeMemberRole(workspaceId: string, userId: string, role: string, tx?: SqlClient): Promise<void>;
  /** Ends a membership (the user's keys there stay as they are). */
  removeMember(workspaceId: string, userId: string, tx?: SqlClient): Promise<void>;

  /** Whether the user has a user key in the workspace, in any status. */
  hasUserKey(userId: string, workspaceId: string, tx?: SqlClient): Promise<boolean>;
  /** Turns off the user's active user keys, in one workspace or (null) everywhere; the keys it turned off. */
  disableUserKeys(userId: string, workspaceId: string | null, tx?: SqlClient): Promise<DisabledKey[]>;
  /** Turns a disabled key back on; false when it is not disabled (deleted, or enabled meanwhile). */
  enableDisabledKey(keyId: string, tx?: SqlClient): Promise<boolean>;
  /**
   * Creates a member's user key as adding a member through the admin API does
   * (the role's default scopes, the organisation's rotation period), except that
   * its secret is shown to no one: an admin rotates the key to hand it over. Its id.
   */
  createMemberKey(key: { userId: string; workspaceId: string; role: string; name: string; description: string | null }): Promise<string>;

  /** The scopes a workspace role gives its members (none for an unknown role). */
  roleScopes(role: string): readonly string[];
  /**
   * Throws a 403 unless the caller holds every power of `role` (its scopes, at
   * least its rank): one may only give, or take away, what one holds.
   * `what` says what the caller tried; `param` is the field the refusal names.
   */
  requireRoleAuthority(ctx: RequestContext, role: string, what: string, param: string): void;
}

/** The control plane's {@link IdentityAdmin}. */
export const IDENTITY_ADMIN = serviceToken<IdentityAdmin>('gateway.identity-admin', 'control-plane');

/**
 * Whether a person may still sign in: the `scim` plugin provides it (an
 * identity provider deactivates people), the `sso` plugin asks it at sign-in
 * and when it reads a session.
 */
export interface AccountStatus {
  /** True when the person was deactivated. */
  deactivated(userId: string): Promise<boolean>;
}

/** The {@link AccountStatus} service (offered by the `scim` plugin): the `sso` plugin asks it whether a person may still sign in. */
export const ACCOUNT_STATUS = serviceToken<AccountStatus>('gateway.account-status', 'scim');

/** The sessions of people signed in: the `sso` plugin provides it, the `scim` plugin ends them when it deactivates a person. */
export interface SignInSessions {
  /** Ends every session of the person, in the caller's transaction; whether there was one. */
  endAll(userId: string, tx: SqlClient): Promise<boolean>;
}

/** The {@link SignInSessions} service (offered by the `sso` plugin): the `scim` plugin ends a deactivated person's sessions with it. */
export const SIGN_IN_SESSIONS = serviceToken<SignInSessions>('gateway.sign-in-sessions', 'sso');
