import * as v from 'valibot';
import type { RequestContext } from '../../../sdk/index.js';
import { Role } from '../../../sdk/admin/index.js';
import { insertKey, presentKey, settleRotationPolicy } from '../api-keys.js';
import { newId } from '../keys.js';
import type { MemberRow } from '../repository.js';
import { requireAuthority, roleHolder } from '../grants.js';
import { defaultScopes } from '../scopes.js';
import { PAGE_QUERY, conflict, iso, listResponse, notFound, ok, pageOf, parseBody, parseQuery, docsFor, type AdminRoute } from './http.js';
import { visibleWorkspace } from './workspaces.js';

const doc = docsFor('Members');
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

export const memberRoutes: AdminRoute[] = [
  {
    name: 'members.create',
    method: 'POST',
    path: '/workspaces/:id/members',
    scope: 'members.create',
    doc: doc('Add a member to a workspace', { params: WORKSPACE, body: AddBody, description: 'The user is created when the email is new. With the organisation setting `user_api_key_auto_create`, the answer carries the member\'s new user key, shown once. A key may only give a role whose scopes it holds.' }),
    async handler(ctx, cp) {
      const ws = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, AddBody);
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
      if (!settings.user_api_key_auto_create) return ok(presentMember(member));
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
      return ok({ ...presentMember(member), api_key: presentKey(row, now, secret) });
    },
  },
  {
    name: 'members.list',
    method: 'GET',
    path: '/workspaces/:id/members',
    scope: 'members.read',
    doc: doc('List the members of a workspace', { params: WORKSPACE, query: ListQuery }),
    async handler(ctx, cp) {
      const ws = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const q = parseQuery(ctx, ListQuery);
      return listResponse(await cp.repo.members(ws.id, pageOf(q)), presentMember);
    },
  },
  {
    name: 'members.get',
    method: 'GET',
    path: '/workspaces/:id/members/:userId',
    scope: 'members.read',
    doc: doc('Get a member', { params: MEMBER }),
    async handler(ctx, cp) {
      const ws = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const member = await cp.repo.member(ws.id, ctx.params!.userId!);
      if (member === undefined) throw notFound('member', ctx.params!.userId!, 'userId');
      return ok(presentMember(member));
    },
  },
  {
    name: 'members.update',
    method: 'PUT',
    path: '/workspaces/:id/members/:userId',
    scope: 'members.update',
    doc: doc('Change a member\'s role', { params: MEMBER, body: UpdateBody }),
    async handler(ctx, cp) {
      const ws = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, UpdateBody);
      const current = await cp.repo.member(ws.id, ctx.params!.userId!);
      if (current === undefined) throw notFound('member', ctx.params!.userId!, 'userId');
      // Both the role taken away and the role given must be within the caller's own.
      requireAuthority(ctx, roleHolder(current.role), `change the role of a member who is "${current.role}"`, 'userId');
      checkAssignable(ctx, body.role);
      const changed = await cp.repo.update('cp_members', { workspace_id: ws.id, user_id: current.user_id }, { role: body.role, updated_at: cp.now() });
      if (changed === 0) throw notFound('member', ctx.params!.userId!, 'userId');
      cp.invalidate();
      return ok(presentMember((await cp.repo.member(ws.id, ctx.params!.userId!))!));
    },
  },
  {
    name: 'members.delete',
    method: 'DELETE',
    path: '/workspaces/:id/members/:userId',
    scope: 'members.delete',
    doc: doc('Remove a member', { params: MEMBER }),
    async handler(ctx, cp) {
      const ws = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const current = await cp.repo.member(ws.id, ctx.params!.userId!);
      if (current === undefined) throw notFound('member', ctx.params!.userId!, 'userId');
      requireAuthority(ctx, roleHolder(current.role), `remove a member who is "${current.role}"`, 'userId');
      if (!(await cp.repo.removeMember(ws.id, current.user_id))) throw notFound('member', ctx.params!.userId!, 'userId');
      cp.invalidate();
      return ok({ object: 'workspace-member', user_id: ctx.params!.userId!, workspace_id: ws.id, deleted: true });
    },
  },
];
