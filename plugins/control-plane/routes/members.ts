import * as v from 'valibot';
import type { RequestContext } from '../../../sdk/index.js';
import { Role } from '../../../sdk/admin/index.js';
import { insertKey, presentKey, settleRotationPolicy } from '../api-keys.js';
import { newId } from '../keys.js';
import type { MemberRow, WorkspaceRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { requireAuthority, roleHolder } from '../grants.js';
import { defaultScopes } from '../scopes.js';
import { conflict, crudRoutes, iso, mapPage, notFound, PAGE_QUERY, pageOf, type AdminRoute } from './http.js';
import { visibleWorkspace } from './workspaces.js';

const WORKSPACE = { id: 'The workspace id or slug.' };
const MEMBER = { ...WORKSPACE, userId: "The member's user id." };

const Email = v.pipe(v.string(), v.trim(), v.toLowerCase(), v.email('must be an email address'), v.maxLength(254));

const AddBody = v.strictObject({ email: Email, name: v.nullish(v.pipe(v.string(), v.maxLength(200))), role: Role });
const UpdateBody = v.strictObject({ role: Role });
const ListQuery = v.strictObject({ ...PAGE_QUERY });

/**
 * A caller may only give a role whose powers it holds itself (its scopes, and at least its rank):
 * otherwise a key with only `members.create` could add an admin (whose user key holds more).
 */
export function checkAssignable(ctx: RequestContext, role: string): void {
  requireAuthority(ctx, roleHolder(role), `give the "${role}" role`, 'role');
}

function presentMember(row: MemberRow) {
  return {
    object: 'workspace-member',
    user_id: row.user_id,
    workspace_id: row.workspace_id,
    email: row.email ?? null,
    name: row.name ?? null,
    role: row.role,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The member, else a 404 naming the user id. */
async function memberOf(cp: ControlPlane, ws: WorkspaceRow, userId: string): Promise<MemberRow> {
  const member = await cp.repo.member(ws.id, userId);
  if (member === undefined) throw notFound('member', userId, 'userId');
  return member;
}

const inWorkspace = (ctx: RequestContext, cp: ControlPlane) => visibleWorkspace(ctx, cp, ctx.params!.id!);

export const memberRoutes: AdminRoute[] = crudRoutes<ControlPlane, typeof AddBody, typeof UpdateBody, typeof ListQuery, v.GenericSchema, WorkspaceRow, WorkspaceRow>({
  name: 'members',
  path: '/workspaces/:id/members',
  item: '/workspaces/:id/members/:userId',
  key: 'userId',
  tag: 'Members',
  params: MEMBER,
  create: {
    summary: 'Add a member to a workspace',
    description: "The user is created when the email is new. With the organisation setting `user_api_key_auto_create`, the answer carries the member's new user key, shown once. A key may only give a role whose scopes it holds.",
    params: WORKSPACE,
    body: AddBody,
    find: inWorkspace,
    async run(ctx, cp, body, ws) {
      checkAssignable(ctx, body.role);
      const now = cp.now();
      let user = await cp.repo.userByEmail(body.email);
      if (user === undefined) {
        user = { id: newId(), email: body.email, name: body.name ?? null, role: 'member', created_at: now, updated_at: now };
        await cp.repo.insert('cp_users', { ...user });
      }
      if ((await cp.repo.member(ws.id, user.id)) !== undefined) throw conflict(`${body.email} is already a member of this workspace.`, 'email');
      await cp.repo.insert('cp_members', { workspace_id: ws.id, user_id: user.id, role: body.role, created_at: now, updated_at: now });
      cp.invalidate();
      const member = (await cp.repo.member(ws.id, user.id))!;
      const settings = await cp.settings();
      if (!settings.user_api_key_auto_create) return presentMember(member);
      // Organisation setting user_api_key_auto_create: each new member gets a user key, shown once here.
      const { row, secret } = await insertKey(cp, {
        type: 'workspace-user',
        name: `${body.email} (auto-created)`,
        description: null,
        workspaceId: ws.id,
        userId: user.id,
        scopes: defaultScopes('workspace-user', body.role),
        rotationPolicy: settleRotationPolicy(undefined, 'workspace-user', settings, now, null),
        expiresAt: null,
        metadata: null,
      });
      return { ...presentMember(member), api_key: presentKey(row, now, secret) };
    },
  },
  list: {
    summary: 'List the members of a workspace',
    params: WORKSPACE,
    query: ListQuery,
    run: async (ctx, cp, q) => mapPage(await cp.repo.members((await inWorkspace(ctx, cp)).id, pageOf(q)), presentMember),
  },
  get: { summary: 'Get a member', run: async (ctx, cp, userId) => presentMember(await memberOf(cp, await inWorkspace(ctx, cp), userId)) },
  update: {
    summary: "Change a member's role",
    body: UpdateBody,
    find: inWorkspace,
    async run(ctx, cp, userId, body, ws) {
      const current = await memberOf(cp, ws, userId);
      // Both the role taken away and the role given must be within the caller's own.
      requireAuthority(ctx, roleHolder(current.role), `change the role of a member who is "${current.role}"`, 'userId');
      checkAssignable(ctx, body.role);
      const changed = await cp.repo.update('cp_members', { workspace_id: ws.id, user_id: current.user_id }, { role: body.role, updated_at: cp.now() });
      if (changed === 0) throw notFound('member', userId, 'userId');
      cp.invalidate();
      return presentMember((await cp.repo.member(ws.id, userId))!);
    },
  },
  remove: {
    summary: 'Remove a member',
    verb: 'delete',
    async run(ctx, cp, userId) {
      const ws = await inWorkspace(ctx, cp);
      const current = await memberOf(cp, ws, userId);
      requireAuthority(ctx, roleHolder(current.role), `remove a member who is "${current.role}"`, 'userId');
      if (!(await cp.repo.removeMember(ws.id, current.user_id))) throw notFound('member', userId, 'userId');
      cp.invalidate();
      return { object: 'workspace-member', user_id: userId, workspace_id: ws.id, deleted: true };
    },
  },
});
