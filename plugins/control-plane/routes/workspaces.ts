import * as v from 'valibot';
import { GatewayError, type RequestContext } from '../../../sdk/index.js';
import { newId, randomSlug } from '../keys.js';
import type { WorkspaceRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import {
  patchOf,
  Description,
  Metadata,
  Name,
  PAGE_QUERY,
  Slug,
  forbidden,
  conflict,
  isOrgAdmin,
  iso,
  json,
  listResponse,
  notFound,
  ok,
  pageOf,
  parseBody,
  parseQuery,
  requireOrgLevel,
  docsFor,
  type AdminRoute,
} from './http.js';

const doc = docsFor('Workspaces');
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

export const workspaceRoutes: AdminRoute[] = [
  {
    name: 'workspaces.create',
    method: 'POST',
    path: '/workspaces',
    scope: 'workspaces.create',
    doc: doc('Create a workspace', { body: CreateBody, description: 'Needs an organisation-level key.' }),
    async handler(ctx, cp) {
      requireOrgLevel(ctx, 'Creating a workspace');
      const body = parseBody(ctx, CreateBody);
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
      return ok(presentWorkspace(row));
    },
  },
  {
    name: 'workspaces.list',
    method: 'GET',
    path: '/workspaces',
    scope: 'workspaces.read',
    doc: doc('List workspaces', { query: ListQuery, description: 'Active ones unless `status` says otherwise; archived ones for organisation owners and admins only. A workspace key sees its own.' }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const statuses = q.status ?? ['active'];
      if (statuses.includes('archived') && !isOrgAdmin(ctx)) {
        throw forbidden('Only organisation owners and admins may list archived workspaces.');
      }
      return listResponse(await cp.repo.workspaces(statuses, ctx.auth?.workspaceId ?? null, pageOf(q)), presentWorkspace);
    },
  },
  {
    name: 'workspaces.get',
    method: 'GET',
    path: '/workspaces/:id',
    scope: 'workspaces.read',
    doc: doc('Get a workspace', { params: WORKSPACE }),
    async handler(ctx, cp) {
      return ok(presentWorkspace(await visibleWorkspace(ctx, cp, ctx.params!.id!)));
    },
  },
  {
    name: 'workspaces.update',
    method: 'PUT',
    path: '/workspaces/:id',
    scope: 'workspaces.update',
    doc: doc('Update a workspace', { params: WORKSPACE, body: UpdateBody, description: 'Archiving or restoring (`status`) needs an organisation-level key.' }),
    async handler(ctx, cp) {
      const row = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, UpdateBody);
      const patch = patchOf(body, ['name', 'description'], cp.now());
      if (body.metadata !== undefined) patch.metadata = body.metadata === null ? null : JSON.stringify(body.metadata);
      if (body.status !== undefined && body.status !== row.status) {
        requireOrgLevel(ctx, 'Archiving or restoring a workspace');
        if (body.status === 'archived' && row.slug === 'default') throw new GatewayError('invalid_request', 'The default workspace cannot be archived.', { param: 'status' });
        patch.status = body.status;
        patch.archived_at = body.status === 'archived' ? cp.now() : null;
      }
      await cp.repo.update('cp_workspaces', { id: row.id }, patch);
      cp.invalidate();
      return ok(presentWorkspace((await cp.repo.workspace(row.id))!));
    },
  },
  {
    name: 'workspaces.archive',
    method: 'DELETE',
    path: '/workspaces/:id',
    scope: 'workspaces.delete',
    doc: doc('Archive a workspace', { params: WORKSPACE, description: 'Needs an organisation-level key; the default workspace cannot be archived.' }),
    async handler(ctx, cp) {
      requireOrgLevel(ctx, 'Archiving a workspace');
      const row = await visibleWorkspace(ctx, cp, ctx.params!.id!);
      if (row.slug === 'default') throw new GatewayError('invalid_request', 'The default workspace cannot be archived.', { param: 'id' });
      if (row.status !== 'archived') {
        const now = cp.now();
        await cp.repo.update('cp_workspaces', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        cp.invalidate();
      }
      return ok(presentWorkspace((await cp.repo.workspace(row.id))!));
    },
  },
];
