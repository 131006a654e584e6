import * as v from 'valibot';
import { GatewayError, type RequestContext } from '../../../sdk/index.js';
import { newId, randomSlug } from '../keys.js';
import type { WorkspaceRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { conflict, crudRoutes, Description, forbidden, isOrgAdmin, iso, json, mapPage, Metadata, Name, notFound, PAGE_QUERY, pageOf, patchOf, requireOrgLevel, Slug, type AdminRoute } from './http.js';

const WORKSPACE = { id: 'The workspace id or slug.' };

const Status = v.picklist(['active', 'archived'], 'must be "active" or "archived"');

const CreateBody = v.strictObject({ name: Name, slug: v.optional(Slug), description: Description, metadata: Metadata });
const UpdateBody = v.strictObject({ name: v.optional(Name), description: Description, metadata: Metadata, status: v.optional(Status) });
const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  status: v.optional(
    v.pipe(
      v.string(),
      v.description('`active` (default), `archived`, or both, comma-separated.'),
      v.transform((s) => [...new Set(s.split(',').map((x) => x.trim()))]),
      v.array(Status, 'must be a comma-separated list of "active" and "archived"'),
    ),
  ),
});

export function presentWorkspace(row: WorkspaceRow) {
  return {
    id: row.id,
    object: 'workspace',
    slug: row.slug,
    name: row.name,
    description: row.description,
    status: row.status,
    metadata: json(row.metadata) ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

/** The workspace if the caller may see it (its own, or any for organisation keys; archived ones for admins only), else a 404. */
export async function visibleWorkspace(ctx: RequestContext, cp: ControlPlane, id: string): Promise<WorkspaceRow> {
  const row = await cp.repo.workspace(id);
  const own = ctx.auth?.workspaceId ?? null;
  if (row === undefined || (own !== null && row.id !== own)) throw notFound('workspace', id);
  if (row.status === 'archived' && !isOrgAdmin(ctx)) throw notFound('workspace', id);
  return row;
}

function refuseDefault(row: WorkspaceRow, param: string): void {
  if (row.slug === 'default') throw new GatewayError('invalid_request', 'The default workspace cannot be archived.', { param });
}

export const workspaceRoutes: AdminRoute[] = crudRoutes<ControlPlane, typeof CreateBody, typeof UpdateBody, typeof ListQuery, v.GenericSchema, WorkspaceRow, void>({
  name: 'workspaces',
  path: '/workspaces',
  tag: 'Workspaces',
  params: WORKSPACE,
  create: {
    summary: 'Create a workspace',
    description: 'Needs an organisation-level key.',
    body: CreateBody,
    find: async (ctx) => requireOrgLevel(ctx, 'Creating a workspace'),
    async run(_ctx, cp, body) {
      const org = await cp.repo.organisation();
      const slug = body.slug ?? `ws-${randomSlug(8)}`;
      if ((await cp.repo.workspace(slug)) !== undefined) throw conflict(`A workspace with slug "${slug}" exists.`, 'slug');
      const now = cp.now();
      const row: WorkspaceRow = {
        id: newId(),
        organisation_id: org!.id,
        slug,
        name: body.name,
        description: body.description ?? null,
        status: 'active',
        metadata: body.metadata ? JSON.stringify(body.metadata) : null,
        created_at: now,
        updated_at: now,
        archived_at: null,
      };
      await cp.repo.insert('cp_workspaces', { ...row });
      cp.invalidate();
      return presentWorkspace(row);
    },
  },
  list: {
    summary: 'List workspaces',
    description: 'Active ones unless `status` says otherwise; archived ones for organisation owners and admins only. A workspace key sees its own.',
    query: ListQuery,
    async run(ctx, cp, q) {
      const statuses = q.status ?? ['active'];
      if (statuses.includes('archived') && !isOrgAdmin(ctx)) {
        throw forbidden('Only organisation owners and admins may list archived workspaces.');
      }
      return mapPage(await cp.repo.workspaces(statuses, ctx.auth?.workspaceId ?? null, pageOf(q)), presentWorkspace);
    },
  },
  get: { summary: 'Get a workspace', run: async (ctx, cp, id) => presentWorkspace(await visibleWorkspace(ctx, cp, id)) },
  update: {
    summary: 'Update a workspace',
    description: 'Archiving or restoring (`status`) needs an organisation-level key.',
    body: UpdateBody,
    find: visibleWorkspace,
    async run(ctx, cp, _id, body, row) {
      const patch = patchOf(body, ['name', 'description'], cp.now());
      if (body.metadata !== undefined) patch.metadata = body.metadata === null ? null : JSON.stringify(body.metadata);
      if (body.status !== undefined && body.status !== row.status) {
        requireOrgLevel(ctx, 'Archiving or restoring a workspace');
        if (body.status === 'archived') refuseDefault(row, 'status');
        patch.status = body.status;
        patch.archived_at = body.status === 'archived' ? cp.now() : null;
      }
      await cp.repo.update('cp_workspaces', { id: row.id }, patch);
      cp.invalidate();
      return presentWorkspace((await cp.repo.workspace(row.id))!);
    },
  },
  remove: {
    summary: 'Archive a workspace',
    description: 'Needs an organisation-level key; the default workspace cannot be archived.',
    async run(ctx, cp, id) {
      requireOrgLevel(ctx, 'Archiving a workspace');
      const row = await visibleWorkspace(ctx, cp, id);
      refuseDefault(row, 'id');
      if (row.status !== 'archived') {
        const now = cp.now();
        await cp.repo.update('cp_workspaces', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        cp.invalidate();
      }
      return presentWorkspace((await cp.repo.workspace(row.id))!);
    },
  },
});
