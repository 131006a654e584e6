import type { RequestContext, SqlClient } from '../../sdk/index.js';
import { TtlCache, type DisabledKey, type IdentityAdmin, type UserInfo, type UserWorkspace } from '../../sdk/admin/index.js';
import { insertKey, settleRotationPolicy } from './api-keys.js';
import { requireAuthority, roleHolder } from './grants.js';
import { newId } from './keys.js';
import { defaultScopes, ROLE_SCOPES } from './scopes.js';
import type { ControlPlane } from './service.js';

const MAX_CACHED = 10_000;
const USER_COLUMNS = 'SELECT id, email, name FROM cp_users';

const toUser = (row: UserInfo | undefined): UserInfo | null => (row === undefined ? null : { id: row.id, email: row.email, name: row.name ?? null });

/**
 * Identity's side of {@link IdentityAdmin}: the users, memberships and user
 * keys that single sign-on and SCIM provisioning change, in identity's tables,
 * for the `sso` and `scim` plugins (which never touch those tables).
 */
export class People implements IdentityAdmin {
  readonly #workspaces: TtlCache<readonly UserWorkspace[]>;

  constructor(private readonly cp: ControlPlane) {
    this.#workspaces = new TtlCache(cp.cacheTtlMs, MAX_CACHED, cp.now);
    cp.onInvalidate(() => this.#workspaces.clear());
  }

  #db(tx: SqlClient | undefined): SqlClient {
    return tx ?? this.cp.sql();
  }

  async user(id: string, tx?: SqlClient): Promise<UserInfo | null> {
    return toUser(await this.#db(tx).get<UserInfo>(`${USER_COLUMNS} WHERE id = ?`, [id]));
  }

  async userByEmail(email: string, tx?: SqlClient): Promise<UserInfo | null> {
    return toUser(await this.#db(tx).get<UserInfo>(`${USER_COLUMNS} WHERE email = ?`, [email]));
  }

  async createUser(email: string, name: string | null, tx?: SqlClient): Promise<UserInfo> {
    const now = this.cp.now();
    const user = { id: newId(), email, name };
    await this.cp.repo.insert('cp_users', { ...user, role: 'member', created_at: now, updated_at: now }, this.#db(tx));
    return user;
  }

  async updateUser(id: string, fields: { email: string; name: string | null }, tx?: SqlClient): Promise<void> {
    await this.cp.repo.update('cp_users', { id }, { email: fields.email, name: fields.name, updated_at: this.cp.now() }, this.#db(tx));
  }

  userWorkspaces(userId: string): readonly UserWorkspace[] | Promise<readonly UserWorkspace[]> {
    return this.#workspaces.get(userId, async () => {
      const rows = await this.cp.sql().all<{ workspace_id: string; slug: string; name: string; role: string }>(
        "SELECT m.workspace_id, w.slug, w.name, m.role FROM cp_members m JOIN cp_workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? AND w.status = 'active' ORDER BY m.created_at, m.workspace_id",
        [userId],
      );
      return Object.freeze(rows.map((r) => Object.freeze({ workspaceId: r.workspace_id, slug: r.slug, name: r.name, role: r.role })));
    });
  }

  async memberRoles(userId: string, tx?: SqlClient): Promise<Map<string, string>> {
    const rows = await this.#db(tx).all<{ workspace_id: string; role: string }>('SELECT workspace_id, role FROM cp_members WHERE user_id = ?', [userId]);
    return new Map(rows.map((r) => [r.workspace_id, r.role]));
  }

  async addMember(workspaceId: string, userId: string, role: string, tx?: SqlClient): Promise<void> {
    const now = this.cp.now();
    await this.cp.repo.insert('cp_members', { workspace_id: workspaceId, user_id: userId, role, created_at: now, updated_at: now }, this.#db(tx));
  }

  async changeMemberRole(workspaceId: string, userId: string, role: string, tx?: SqlClient): Promise<void> {
    await this.cp.repo.update('cp_members', { workspace_id: workspaceId, user_id: userId }, { role, updated_at: this.cp.now() }, this.#db(tx));
  }

  async removeMember(workspaceId: string, userId: string, tx?: SqlClient): Promise<void> {
    await this.#db(tx).run('DELETE FROM cp_members WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId]);
  }

  async hasUserKey(userId: string, workspaceId: string, tx?: SqlClient): Promise<boolean> {
    const keys = await this.#db(tx).get<{ n: number | string }>("SELECT COUNT(*) AS n FROM cp_api_keys WHERE type = 'workspace-user' AND user_id = ? AND workspace_id = ?", [
      userId,
      workspaceId,
    ]);
    return Number(keys?.n ?? 0) > 0;
  }

  async disableUserKeys(userId: string, workspaceId: string | null, tx?: SqlClient): Promise<DisabledKey[]> {
    const db = this.#db(tx);
    const keys = await db.all<{ id: string; workspace_id: string | null }>(
      `SELECT id, workspace_id FROM cp_api_keys WHERE type = 'workspace-user' AND user_id = ? AND status = 'active'${workspaceId === null ? '' : ' AND workspace_id = ?'}`,
      workspaceId === null ? [userId] : [userId, workspaceId],
    );
    const now = this.cp.now();
    for (const k of keys) await db.run("UPDATE cp_api_keys SET status = 'disabled', updated_at = ? WHERE id = ?", [now, k.id]);
    return keys.map((k) => ({ id: k.id, workspaceId: k.workspace_id }));
  }

  async enableDisabledKey(keyId: string, tx?: SqlClient): Promise<boolean> {
    return (await this.#db(tx).run("UPDATE cp_api_keys SET status = 'active', updated_at = ? WHERE id = ? AND status = 'disabled'", [this.cp.now(), keyId])).changes > 0;
  }

  async createMemberKey(key: { userId: string; workspaceId: string; role: string; name: string; description: string | null }): Promise<string> {
    const settings = await this.cp.settings();
    const { row } = await insertKey(this.cp, {
      type: 'workspace-user',
      name: key.name,
      description: key.description,
      workspaceId: key.workspaceId,
      userId: key.userId,
      scopes: defaultScopes('workspace-user', key.role),
      rotationPolicy: settleRotationPolicy(undefined, 'workspace-user', settings, this.cp.now(), null),
      expiresAt: null,
      metadata: null,
    });
    return row.id;
  }

  roleScopes(role: string): readonly string[] {
    return ROLE_SCOPES[role] ?? [];
  }

  requireRoleAuthority(ctx: RequestContext, role: string, what: string, param: string): void {
    requireAuthority(ctx, roleHolder(role), what, param);
  }
}
