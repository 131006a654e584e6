import type { SqlClient } from '../../../sdk/index.js';
import { newId } from '../keys.js';
import type { ControlPlane } from '../service.js';

/*
 * What SCIM keeps, and how a group membership becomes a workspace membership.
 * Every function takes the client of the caller's transaction: SCIM writes
 * run in one transaction each, serialised across instances on PostgreSQL.
 */

export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

/** A provisioned user: the gateway user (id, email, name) and what SCIM keeps beside it. */
export interface ScimUserRow {
  user_id: string;
  email: string;
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

type Row = Record<string, unknown>;
const NUMERIC = new Set(['created_at', 'updated_at', 'active', 'last_used_at']);
function norm<T>(row: Row | undefined): T | undefined {
  if (row === undefined) return undefined;
  for (const k in row) if (NUMERIC.has(k) && row[k] !== null && typeof row[k] !== 'number') row[k] = Number(row[k]);
  return row as T;
}
async function all<T>(db: SqlClient, sql: string, params: readonly unknown[]): Promise<T[]> {
  return (await db.all<Row>(sql, params)).map((r) => norm<T>(r)!);
}
async function get<T>(db: SqlClient, sql: string, params: readonly unknown[]): Promise<T | undefined> {
  return norm<T>(await db.get<Row>(sql, params));
}

/** The case-insensitive key of a userName or a group name (RFC 7643 makes `userName` case-insensitive). */
export function nameKey(name: string): string {
  return name.toLowerCase();
}

const USER_SELECT = 'SELECT s.*, u.email FROM cp_scim_users s JOIN cp_users u ON u.id = s.user_id';

export function scimUser(db: SqlClient, id: string): Promise<ScimUserRow | undefined> {
  return get<ScimUserRow>(db, `${USER_SELECT} WHERE s.user_id = ?`, [id]);
}

/** One `attribute = value` condition of a filter, already mapped to a column (values compared as given, or lower-cased for name keys). */
export interface Condition {
  column: string;
  value: string;
}

export async function scimUsers(db: SqlClient, where: readonly Condition[], startIndex: number, count: number): Promise<{ total: number; rows: ScimUserRow[] }> {
  const clause = where.length === 0 ? '' : ` WHERE ${where.map((c) => `${c.column} = ?`).join(' AND ')}`;
  const params = where.map((c) => c.value);
  const total = Number((await db.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM cp_scim_users s JOIN cp_users u ON u.id = s.user_id${clause}`, params))?.n ?? 0);
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
export async function reconcile(tx: SqlClient, cp: ControlPlane, userIds: Iterable<string>, autoCreate: boolean): Promise<ReconcileResult> {
  const result: ReconcileResult = { keysToCreate: [], changed: false };
  const now = cp.now();
  for (const userId of new Set(userIds)) {
    const scim = await scimUser(tx, userId);
    const active = scim !== undefined && scim.active === 1;
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
    const members = new Map((await tx.all<{ workspace_id: string; role: string }>('SELECT workspace_id, role FROM cp_members WHERE user_id = ?', [userId])).map((r) => [r.workspace_id, r.role]));

    for (const [workspaceId, role] of desired) {
      const current = members.get(workspaceId);
      if (current === undefined) {
        await cp.repo.insert('cp_members', { workspace_id: workspaceId, user_id: userId, role, created_at: now, updated_at: now }, tx);
        await cp.repo.insert('cp_scim_memberships', { workspace_id: workspaceId, user_id: userId, created_at: now }, tx);
        members.set(workspaceId, role);
        result.changed = true;
        const keys = await tx.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM cp_api_keys WHERE type = 'workspace-user' AND user_id = ? AND workspace_id = ?", [userId, workspaceId]);
        if (autoCreate && Number(keys?.n ?? 0) === 0) result.keysToCreate.push({ userId, workspaceId, role, email: scim!.email });
      } else if (managed.has(workspaceId) && current !== role) {
        await cp.repo.update('cp_members', { workspace_id: workspaceId, user_id: userId }, { role, updated_at: now }, tx);
        result.changed = true;
      }
    }
    for (const workspaceId of managed) {
      if (desired.has(workspaceId)) continue;
      await tx.run('DELETE FROM cp_members WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId]);
      await tx.run('DELETE FROM cp_scim_memberships WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId]);
      members.delete(workspaceId);
      result.changed = true;
      if (await suspendKeys(tx, userId, workspaceId, now)) result.changed = true;
    }
    if (!active) {
      // A deactivated (or deleted) person keeps no way in: every user key off, every session ended.
      if (await suspendKeys(tx, userId, null, now)) result.changed = true;
      if ((await tx.run('DELETE FROM cp_sessions WHERE user_id = ?', [userId])).changes > 0) result.changed = true;
      continue;
    }
    // Keys SCIM turned off come back where the person is a member again.
    const suspended = await tx.all<{ key_id: string; workspace_id: string | null }>('SELECT key_id, workspace_id FROM cp_scim_suspended_keys WHERE user_id = ?', [userId]);
    for (const s of suspended) {
      if (s.workspace_id === null || !members.has(s.workspace_id)) continue;
      await tx.run("UPDATE cp_api_keys SET status = 'active', updated_at = ? WHERE id = ? AND status = 'disabled'", [now, s.key_id]);
      await tx.run('DELETE FROM cp_scim_suspended_keys WHERE key_id = ?', [s.key_id]);
      result.changed = true;
    }
  }
  return result;
}

/** Disables the user's active user keys (in one workspace, or all), remembering them so they can come back. */
async function suspendKeys(tx: SqlClient, userId: string, workspaceId: string | null, now: number): Promise<boolean> {
  const keys = await tx.all<{ id: string; workspace_id: string | null }>(
    `SELECT id, workspace_id FROM cp_api_keys WHERE type = 'workspace-user' AND user_id = ? AND status = 'active'${workspaceId === null ? '' : ' AND workspace_id = ?'}`,
    workspaceId === null ? [userId] : [userId, workspaceId],
  );
  for (const k of keys) {
    await tx.run("UPDATE cp_api_keys SET status = 'disabled', updated_at = ? WHERE id = ?", [now, k.id]);
    await tx.run('DELETE FROM cp_scim_suspended_keys WHERE key_id = ?', [k.id]);
    await tx.run('INSERT INTO cp_scim_suspended_keys (key_id, user_id, workspace_id, created_at) VALUES (?, ?, ?, ?)', [k.id, userId, k.workspace_id, now]);
  }
  return keys.length > 0;
}

/** A new mapping row. */
export function newMapping(workspaceId: string, role: string, groupId: string | null, groupName: string | null, now: number): MappingRow & { scim_group_name_key: string | null } {
  return { id: newId(), workspace_id: workspaceId, role, scim_group_id: groupId, scim_group_name: groupName, scim_group_name_key: groupName === null ? null : nameKey(groupName), created_at: now };
}
