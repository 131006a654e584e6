import { hash, randomUUID } from 'node:crypto';
import type { Logger, SqlClient } from '../../sdk/index.js';
import { SqlTables, type Identity, type IdentityAdmin, type SignInSessions } from '../../sdk/admin/index.js';

/*
 * What SCIM keeps, and how a group membership becomes a workspace membership.
 * Every function takes the client of the caller's transaction: SCIM writes
 * run in one transaction each, serialised across instances on PostgreSQL.
 * The gateway's users, memberships and user keys are identity's: SCIM
 * changes them through `IdentityAdmin`, never in identity's tables.
 */

const NUMERIC = new Set(['created_at', 'updated_at', 'active', 'last_used_at']);

/** What SCIM works with: identity (workspaces, the store, the clock, settings), its people, the sessions it ends, SCIM's own tables. */
export class Scim {
  /** SCIM's tables, on the identity store. */
  readonly tables: SqlTables;

  constructor(
    readonly identity: Identity,
    readonly people: IdentityAdmin,
    /** The `sso` plugin's sessions, when it is loaded: a deactivated person's end with their access. */
    readonly sessions: SignInSessions | undefined,
    readonly logger: Logger,
  ) {
    this.tables = new SqlTables(() => identity.sql(), NUMERIC);
  }

  db(): SqlClient {
    return this.identity.sql();
  }

  now(): number {
    return this.identity.now();
  }
}

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

/** A provisioned user: what SCIM keeps beside the gateway user (`user_id`; its email and name are identity's). */
export interface ScimUserRow {
  user_id: string;
  user_name: string;
  external_id: string | null;
  active: number;
  given_name: string | null;
  family_name: string | null;
  display_name: string | null;
  emails: string | null;
  created_at: number;
  updated_at: number;
}

export interface ScimGroupRow {
  id: string;
  display_name: string;
  external_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface MappingRow {
  id: string;
  workspace_id: string;
  role: string;
  scim_group_id: string | null;
  scim_group_name: string | null;
  created_at: number;
}

export interface ScimTokenRow {
  id: string;
  name: string;
  token_mask: string;
  created_at: number;
  last_used_at: number | null;
}

/** Reads with SCIM's numeric columns normalised; each names its client (a transaction's, or the store's). */
const rows = new SqlTables(() => {
  throw new Error('SCIM: a read names its client');
}, NUMERIC);
const all = <T>(db: SqlClient, sql: string, params: readonly unknown[]) => rows.all<T>(sql, params, db);
const get = <T>(db: SqlClient, sql: string, params: readonly unknown[]) => rows.get<T>(sql, params, db);

/** How a SCIM token is kept and looked up: its SHA-256 digest (tokens are random 256-bit values: no salt needed). */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** The case-insensitive key of a userName or a group name (RFC 7643 makes `userName` case-insensitive). */
export function nameKey(name: string): string {
  return name.toLowerCase();
}

const USER_SELECT = 'SELECT s.* FROM cp_scim_users s';

/** The column of a filter condition on the gateway user's email: identity's, looked up by `scimUsers` (never a real column). */
export const USER_EMAIL = 'identity:email';

export function scimUser(db: SqlClient, id: string): Promise<ScimUserRow | undefined> {
  return get<ScimUserRow>(db, `${USER_SELECT} WHERE s.user_id = ?`, [id]);
}

/** One `attribute = value` condition of a filter, already mapped to a column (values compared as given, or lower-cased for name keys). */
export interface Condition {
  column: string;
  value: string;
}

export async function scimUsers(db: SqlClient, people: IdentityAdmin, filter: readonly Condition[], startIndex: number, count: number): Promise<{ total: number; rows: ScimUserRow[] }> {
  // An email names one user: its id (no user: '', which matches none).
  const where = await Promise.all(filter.map(async (c) => (c.column !== USER_EMAIL ? c : { column: 's.user_id', value: (await people.userByEmail(c.value, db))?.id ?? '' })));
  const clause = where.length === 0 ? '' : ` WHERE ${where.map((c) => `${c.column} = ?`).join(' AND ')}`;
  const params = where.map((c) => c.value);
  const total = Number((await db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM cp_scim_users s${clause}`, params))?.n ?? 0);
  const rows = count === 0 ? [] : await all<ScimUserRow>(db, `${USER_SELECT}${clause} ORDER BY s.created_at, s.user_id LIMIT ? OFFSET ?`, [...params, count, startIndex - 1]);
  return { total, rows };
}

export function scimGroup(db: SqlClient, id: string): Promise<ScimGroupRow | undefined> {
  return get<ScimGroupRow>(db, 'SELECT id, display_name, external_id, created_at, updated_at FROM cp_scim_groups WHERE id = ?', [id]);
}

export async function scimGroups(db: SqlClient, where: readonly Condition[], startIndex: number, count: number): Promise<{ total: number; rows: ScimGroupRow[] }> {
  const clause = where.length === 0 ? '' : ` WHERE ${where.map((c) => `${c.column} = ?`).join(' AND ')}`;
  const params = where.map((c) => c.value);
  const total = Number((await db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM cp_scim_groups${clause}`, params))?.n ?? 0);
  const rows =
    count === 0 ? [] : await all<ScimGroupRow>(db, `SELECT id, display_name, external_id, created_at, updated_at FROM cp_scim_groups${clause} ORDER BY created_at, id LIMIT ? OFFSET ?`, [...params, count, startIndex - 1]);
  return { total, rows };
}

/** Members of a group with what a SCIM answer shows of them. */
export function groupMembers(db: SqlClient, groupId: string): Promise<Array<{ user_id: string; user_name: string }>> {
  return all(db, 'SELECT gm.user_id, s.user_name FROM cp_scim_group_members gm JOIN cp_scim_users s ON s.user_id = gm.user_id WHERE gm.group_id = ? ORDER BY gm.created_at, gm.user_id', [groupId]);
}

export function userGroups(db: SqlClient, userId: string): Promise<Array<{ id: string; display_name: string }>> {
  return all(db, 'SELECT g.id, g.display_name FROM cp_scim_group_members gm JOIN cp_scim_groups g ON g.id = gm.group_id WHERE gm.user_id = ? ORDER BY g.display_name, g.id', [userId]);
}

/** Which of these ids are provisioned users (a group may only hold those). */
export async function knownUsers(db: SqlClient, ids: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  // In slices: a SCIM group update may name thousands of members, more than a statement takes parameters.
  for (let i = 0; i < ids.length; i += 500) {
    const slice = ids.slice(i, i + 500);
    for (const r of await db.all<{ user_id: string }>(`SELECT user_id FROM cp_scim_users WHERE user_id IN (${slice.map(() => '?').join(', ')})`, slice)) out.add(r.user_id);
  }
  return out;
}

/** Users of every group a mapping may match: the ones whose memberships a new or removed mapping changes. */
export async function usersOfMapping(db: SqlClient, mapping: Pick<MappingRow, 'scim_group_id' | 'scim_group_name'>): Promise<string[]> {
  const rows = await db.all<{ user_id: string }>(
    `SELECT DISTINCT gm.user_id FROM cp_scim_group_members gm JOIN cp_scim_groups g ON g.id = gm.group_id
     WHERE g.id = ? OR g.external_id = ? OR g.display_name_key = ?`,
    [mapping.scim_group_id ?? '', mapping.scim_group_id ?? '', mapping.scim_group_name === null ? '' : nameKey(mapping.scim_group_name)],
  );
  return rows.map((r) => r.user_id);
}

/** Serialises SCIM writes across instances (PostgreSQL); SQLite runs one transaction at a time anyway. */
export async function lockScim(tx: SqlClient): Promise<void> {
  if (tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(hashtext(?))', ['control-plane:scim']);
}

const ROLE_RANK: Readonly<Record<string, number>> = { member: 1, manager: 2, admin: 3 };

/** What reconciling changed, for the caller to finish once the transaction committed. */
export interface ReconcileResult {
  /** Memberships SCIM created, for which the organisation wants a user key and none exists yet. */
  keysToCreate: Array<{ userId: string; workspaceId: string; role: string; email: string }>;
  changed: boolean;
}

/**
 * Brings the workspace memberships of these users in line with their groups
 * and the group → workspace mappings. A user in a mapped group is a member
 * with the mapping's role (the highest, when several map to one workspace);
 * a membership SCIM made goes when no mapped group holds the user any more,
 * or the user is deactivated or deleted, and the user's keys in that
 * workspace are disabled. Memberships added through the admin API are never
 * changed. A deactivated user's every user key is disabled; keys SCIM
 * disabled come back when the user is a member again and active.
 */
export async function reconcile(tx: SqlClient, scim: Scim, userIds: Iterable<string>, autoCreate: boolean): Promise<ReconcileResult> {
  const result: ReconcileResult = { keysToCreate: [], changed: false };
  const { people } = scim;
  const now = scim.now();
  for (const userId of new Set(userIds)) {
    const user = await scimUser(tx, userId);
    const active = user !== undefined && user.active === 1;
    const desired = new Map<string, string>();
    if (active) {
      const rows = await tx.all<{ workspace_id: string; role: string }>(
        `SELECT m.workspace_id, m.role FROM cp_scim_group_members gm
         JOIN cp_scim_groups g ON g.id = gm.group_id
         JOIN cp_scim_workspace_mappings m ON m.scim_group_id = g.id OR m.scim_group_id = g.external_id OR m.scim_group_name_key = g.display_name_key
         WHERE gm.user_id = ?`,
        [userId],
      );
      for (const r of rows) if ((ROLE_RANK[r.role] ?? 0) > (ROLE_RANK[desired.get(r.workspace_id) ?? ''] ?? 0)) desired.set(r.workspace_id, r.role);
    }
    const managed = new Set((await tx.all<{ workspace_id: string }>('SELECT workspace_id FROM cp_scim_memberships WHERE user_id = ?', [userId])).map((r) => r.workspace_id));
    const members = await people.memberRoles(userId, tx);

    for (const [workspaceId, role] of desired) {
      const current = members.get(workspaceId);
      if (current === undefined) {
        await people.addMember(workspaceId, userId, role, tx);
        await scim.tables.insert('cp_scim_memberships', { workspace_id: workspaceId, user_id: userId, created_at: now }, tx);
        members.set(workspaceId, role);
        result.changed = true;
        if (autoCreate && !(await people.hasUserKey(userId, workspaceId, tx))) result.keysToCreate.push({ userId, workspaceId, role, email: (await people.user(userId, tx))!.email });
      } else if (managed.has(workspaceId) && current !== role) {
        await people.changeMemberRole(workspaceId, userId, role, tx);
        result.changed = true;
      }
    }
    for (const workspaceId of managed) {
      if (desired.has(workspaceId)) continue;
      await people.removeMember(workspaceId, userId, tx);
      await tx.run('DELETE FROM cp_scim_memberships WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId]);
      members.delete(workspaceId);
      result.changed = true;
      if (await suspendKeys(tx, people, userId, workspaceId, now)) result.changed = true;
    }
    if (!active) {
      // A deactivated (or deleted) person keeps no way in: every user key off, every session ended.
      if (await suspendKeys(tx, people, userId, null, now)) result.changed = true;
      if (scim.sessions !== undefined && (await scim.sessions.endAll(userId, tx))) result.changed = true;
      continue;
    }
    // Keys SCIM turned off come back where the person is a member again.
    const suspended = await tx.all<{ key_id: string; workspace_id: string | null }>('SELECT key_id, workspace_id FROM cp_scim_suspended_keys WHERE user_id = ?', [userId]);
    for (const s of suspended) {
      if (s.workspace_id === null || !members.has(s.workspace_id)) continue;
      await people.enableDisabledKey(s.key_id, tx);
      await tx.run('DELETE FROM cp_scim_suspended_keys WHERE key_id = ?', [s.key_id]);
      result.changed = true;
    }
  }
  return result;
}

/** Disables the user's active user keys (in one workspace, or all), remembering them so they can come back. */
async function suspendKeys(tx: SqlClient, people: IdentityAdmin, userId: string, workspaceId: string | null, now: number): Promise<boolean> {
  const keys = await people.disableUserKeys(userId, workspaceId, tx);
  for (const k of keys) {
    await tx.run('DELETE FROM cp_scim_suspended_keys WHERE key_id = ?', [k.id]);
    await tx.run('INSERT INTO cp_scim_suspended_keys (key_id, user_id, workspace_id, created_at) VALUES (?, ?, ?, ?)', [k.id, userId, k.workspaceId, now]);
  }
  return keys.length > 0;
}

/** A new mapping row. */
export function newMapping(workspaceId: string, role: string, groupId: string | null, groupName: string | null, now: number): MappingRow & { scim_group_name_key: string | null } {
  return { id: randomUUID(), workspace_id: workspaceId, role, scim_group_id: groupId, scim_group_name: groupName, scim_group_name_key: groupName === null ? null : nameKey(groupName), created_at: now };
}
