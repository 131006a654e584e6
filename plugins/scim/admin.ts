import { randomBytes, randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { GatewayError } from '../../sdk/index.js';
import { BY_ID, conflict, crudRoutes, iso, mapPage, Name, notFound, PAGE_QUERY, pageOf, requireOrgLevel, Role, workspaceFor, type AdminRoute, type CrudAccess } from '../../sdk/admin/index.js';
import { hashSecret, newMapping, usersOfMapping, type MappingRow, type Scim, type ScimTokenRow } from './store.js';
import { scimWrite } from './write.js';

/*
 * The admin API of SCIM (under /v1, with gateway keys): the bearer tokens
 * identity providers use, and the group → workspace mappings. Both decide who
 * joins which workspace with which role, so both are organisation-level.
 */

/** Prefix of SCIM tokens, so secret scanners and people tell them from gateway keys. */
export const SCIM_TOKEN_PREFIX = 'scim-';

/** What a listing shows of a token: its prefix and last four characters (as of a gateway key). */
const maskToken = (secret: string) => `${secret.slice(0, 4)}****${secret.slice(-4)}`;

const GroupRef = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters'));
const MappingBody = v.pipe(
  v.strictObject({ workspace_id: v.pipe(v.string('must be a workspace id or slug'), v.minLength(1, 'must not be empty')), role: Role, scim_group_id: v.optional(GroupRef), scim_group_name: v.optional(GroupRef) }),
  v.forward(
    v.check((b) => (b.scim_group_id === undefined) !== (b.scim_group_name === undefined), 'exactly one of scim_group_id and scim_group_name is required'),
    ['scim_group_id'],
  ),
);
const MappingQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()) });
const TokenBody = v.strictObject({ name: Name });
const TokenQuery = v.strictObject({ ...PAGE_QUERY });

function presentMapping(row: MappingRow) {
  return {
    id: row.id,
    object: 'scim-workspace-mapping',
    workspace_id: row.workspace_id,
    role: row.role,
    scim_group_id: row.scim_group_id,
    scim_group_name: row.scim_group_name,
    created_at: iso(Number(row.created_at)),
  };
}

function presentToken(row: ScimTokenRow, secret?: string) {
  return {
    id: row.id,
    object: 'scim-token',
    name: row.name,
    masked_token: row.token_mask,
    ...(secret === undefined ? {} : { token: secret }),
    created_at: iso(Number(row.created_at)),
    last_used_at: row.last_used_at === null ? null : iso(Number(row.last_used_at)),
  };
}

async function mappingOr404(scim: Scim, id: string): Promise<MappingRow> {
  const row = id.length > 64 ? undefined : await scim.db().get<MappingRow>('SELECT * FROM cp_scim_workspace_mappings WHERE id = ?', [id]);
  if (row === undefined) throw notFound('SCIM workspace mapping', id);
  return row;
}

const MAPPING_GUARD: Readonly<Record<CrudAccess, string>> = {
  create: 'Mapping SCIM groups to workspaces',
  read: 'Reading SCIM workspace mappings',
  update: 'Changing a SCIM workspace mapping',
  delete: 'Deleting a SCIM workspace mapping',
};
const TOKEN_GUARD: Readonly<Record<CrudAccess, string>> = { create: 'Creating a SCIM token', read: 'Reading SCIM tokens', update: 'Changing a SCIM token', delete: 'Deleting a SCIM token' };
/** Both resources decide who joins which workspace with which role: organisation-level keys only, with the organisation's scopes. */
const ORGANISATION_SCOPES = { create: 'organisation.update', read: 'organisation.read', delete: 'organisation.update' } as const;

/** The admin routes. */
export const scimAdminRoutes: AdminRoute<Scim>[] = [
  ...crudRoutes<Scim, typeof MappingBody, v.GenericSchema, typeof MappingQuery>({
    name: 'scim.workspaces',
    path: '/scim/workspaces',
    tag: 'SCIM',
    params: BY_ID,
    scopes: ORGANISATION_SCOPES,
    guard: (ctx, access) => requireOrgLevel(ctx, MAPPING_GUARD[access]),
    create: {
      summary: 'Map an identity-provider group to a workspace',
      description: 'Users in the group become members of the workspace with the mapped role.',
      body: MappingBody,
      async run(ctx, scim, body) {
        // The role's members get its scopes: a caller may only hand out what it holds (as when adding a member).
        scim.people.requireRoleAuthority(ctx, body.role, `give the "${body.role}" role`, 'role');
        const ws = await scim.identity.workspace(body.workspace_id);
        if (ws === null) throw notFound('workspace', body.workspace_id, 'workspace_id');
        if (ws.status !== 'active') throw new GatewayError('invalid_request', `Workspace "${ws.slug}" is archived.`, { param: 'workspace_id' });
        const row = newMapping(ws.id, body.role, body.scim_group_id ?? null, body.scim_group_name ?? null, scim.now());
        const same = await scim.db().get(
          'SELECT id FROM cp_scim_workspace_mappings WHERE workspace_id = ? AND (scim_group_id = ? OR scim_group_name_key = ?)',
          [ws.id, row.scim_group_id ?? '', row.scim_group_name_key ?? ''],
        );
        if (same !== undefined) throw conflict('This group is mapped to this workspace already; delete that mapping to change its role.', row.scim_group_id === null ? 'scim_group_name' : 'scim_group_id');
        // Members of the group join the workspace now.
        await scimWrite(scim, async (tx, touched) => {
          await scim.tables.insert('cp_scim_workspace_mappings', { ...row }, tx);
          for (const id of await usersOfMapping(tx, row)) touched.add(id);
        });
        return presentMapping(row);
      },
    },
    list: {
      summary: 'List group to workspace mappings',
      query: MappingQuery,
      async run(ctx, scim, q) {
        const workspaceId = q.workspace_id === undefined ? null : await workspaceFor(ctx, scim.identity, q.workspace_id);
        const where = workspaceId === null ? '' : ' WHERE workspace_id = ?';
        const page = await scim.tables.paged<MappingRow>(`FROM cp_scim_workspace_mappings${where}`, workspaceId === null ? [] : [workspaceId], 'created_at, id', pageOf(q));
        return mapPage(page, presentMapping);
      },
    },
    get: { summary: 'Get a group to workspace mapping', run: async (_ctx, scim, id) => presentMapping(await mappingOr404(scim, id)) },
    remove: {
      summary: 'Delete a group to workspace mapping',
      async run(ctx, scim, id) {
        const row = await mappingOr404(scim, id);
        // Its members lose the role: taking a role away takes as much as giving it.
        scim.people.requireRoleAuthority(ctx, row.role, `delete a mapping that gives the "${row.role}" role`, 'id');
        // Members the mapping made lose the membership (unless another mapping still gives it).
        await scimWrite(scim, async (tx, touched) => {
          await tx.run('DELETE FROM cp_scim_workspace_mappings WHERE id = ?', [row.id]);
          for (const id of await usersOfMapping(tx, row)) touched.add(id);
        });
        return { id: row.id, object: 'scim-workspace-mapping', deleted: true };
      },
    },
  }),
  ...crudRoutes<Scim, typeof TokenBody, v.GenericSchema, typeof TokenQuery>({
    name: 'scim.tokens',
    path: '/scim/tokens',
    tag: 'SCIM',
    params: BY_ID,
    scopes: ORGANISATION_SCOPES,
    guard: (ctx, access) => requireOrgLevel(ctx, TOKEN_GUARD[access]),
    create: {
      summary: 'Create a SCIM token',
      description: 'A bearer token an identity provider provisions users and groups with at `/scim/v2`; shown once.',
      body: TokenBody,
      async run(ctx, scim, body) {
        // The token puts any user in any mapped group, so with any role a mapping gives, up to admin.
        scim.people.requireRoleAuthority(ctx, 'admin', 'create a SCIM token (it can give the "admin" role through group mappings)', 'x-gateway-api-key');
        const secret = SCIM_TOKEN_PREFIX + randomBytes(32).toString('base64url');
        const row: ScimTokenRow = { id: randomUUID(), name: body.name, token_mask: maskToken(secret), created_at: scim.now(), last_used_at: null };
        await scim.tables.insert('cp_scim_tokens', { ...row, token_hash: hashSecret(secret) });
        return presentToken(row, secret);
      },
    },
    list: {
      summary: 'List SCIM tokens',
      query: TokenQuery,
      async run(_ctx, scim, q) {
        const page = await scim.tables.paged<ScimTokenRow>('FROM cp_scim_tokens', [], 'created_at, id', pageOf(q), 'id, name, token_mask, created_at, last_used_at');
        return mapPage(page, (r) => presentToken(r));
      },
    },
    remove: {
      summary: 'Delete a SCIM token',
      async run(_ctx, scim, id) {
        if ((await scim.db().run('DELETE FROM cp_scim_tokens WHERE id = ?', [id])).changes === 0) throw notFound('SCIM token', id);
        return { id, object: 'scim-token', deleted: true };
      },
    },
  }),
];
