import * as v from 'valibot';
import type { RequestContext } from '../../../../sdk/index.js';
import { canSee, conflict, crudRoutes, iso, mapPage, newId, notFound, PAGE_QUERY, pageOf, patchOf, randomSlug, Slug, workspaceFor, type AdminRoute } from '../../../../sdk/admin/index.js';
import type { ProviderRow } from '../repository.js';
import type { ProviderStore } from '../service.js';

const Note = v.nullish(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters')));
const ProviderName = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200));
const CreateBody = v.strictObject({ name: ProviderName, slug: v.optional(Slug), integration_id: v.string(), workspace_id: v.nullish(v.string()), note: Note });
const UpdateBody = v.strictObject({
  name: v.optional(ProviderName),
  note: Note,
  integration_id: v.optional(v.string()),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
});
const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()) });

export function presentProvider(row: ProviderRow) {
  return {
    id: row.id,
    object: 'provider',
    slug: row.slug,
    name: row.name,
    workspace_id: row.workspace_id,
    integration_id: row.integration_id,
    note: row.note,
    status: row.status,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function insertProvider(
  store: ProviderStore,
  p: { workspaceId: string; slug: string; name: string; integrationId: string; note: string | null },
): Promise<ReturnType<typeof presentProvider>> {
  const now = store.now();
  const row: ProviderRow = { id: newId(), workspace_id: p.workspaceId, slug: p.slug, name: p.name, integration_id: p.integrationId, note: p.note, status: 'active', created_at: now, updated_at: now };
  await store.repo.insert('cp_providers', { ...row });
  store.invalidate();
  return presentProvider(row);
}

/** An integration the workspace may point a provider at: its own or an organisation-wide one. */
async function usableIntegration(ctx: RequestContext, store: ProviderStore, workspaceId: string, id: string) {
  const row = await store.repo.integration(id);
  if (row === undefined || !canSee(ctx, row.workspace_id) || (row.workspace_id !== null && row.workspace_id !== workspaceId)) throw notFound('integration', id, 'integration_id');
  return row;
}

/** Looks a provider up in the caller's workspace (or, for organisation keys, any workspace by id). */
async function visibleProvider(ctx: RequestContext, store: ProviderStore, ref: string): Promise<ProviderRow> {
  const own = ctx.auth?.workspaceId ?? null;
  const workspaceId = own ?? (await workspaceFor(ctx, store.identity, ctx.header('x-gateway-workspace') || undefined, 'x-gateway-workspace'));
  const row = (await store.repo.provider(workspaceId, ref)) ?? (own === null ? await store.repo.providerById(ref) : undefined);
  if (row === undefined) throw notFound('provider', ref);
  return row;
}

export const providerRoutes: AdminRoute<ProviderStore>[] = crudRoutes<ProviderStore, typeof CreateBody, typeof UpdateBody, typeof ListQuery, v.GenericSchema, ProviderRow>({
  name: 'providers',
  path: '/providers',
  tag: 'Providers',
  create: {
    summary: 'Create a provider slug',
    description: "A name (`@slug`) configs and requests use for an integration's credentials.",
    body: CreateBody,
    async run(ctx, store, body) {
      const workspaceId = await workspaceFor(ctx, store.identity, body.workspace_id);
      const integration = await usableIntegration(ctx, store, workspaceId, body.integration_id);
      const slug = body.slug ?? `${integration.provider.replace(/[^a-z0-9-]/g, '')}-${randomSlug(6)}`;
      if ((await store.repo.provider(workspaceId, slug)) !== undefined) throw conflict(`A provider with slug "@${slug}" exists in this workspace.`, 'slug');
      return insertProvider(store, { workspaceId, slug, name: body.name, integrationId: integration.id, note: body.note ?? null });
    },
  },
  list: {
    summary: 'List provider slugs',
    query: ListQuery,
    run: async (ctx, store, q) => mapPage(await store.repo.providers(await workspaceFor(ctx, store.identity, q.workspace_id), pageOf(q)), presentProvider),
  },
  get: { summary: 'Get a provider slug', run: async (ctx, store, id) => presentProvider(await visibleProvider(ctx, store, id)) },
  update: {
    summary: 'Update a provider slug',
    body: UpdateBody,
    find: visibleProvider,
    async run(ctx, store, _id, body, row) {
      const patch = patchOf(body, ['name', 'note', 'status'], store.now());
      if (body.integration_id !== undefined) patch.integration_id = (await usableIntegration(ctx, store, row.workspace_id, body.integration_id)).id;
      await store.repo.update('cp_providers', { id: row.id }, patch);
      store.invalidate();
      return presentProvider((await store.repo.provider(row.workspace_id, row.id))!);
    },
  },
  remove: {
    summary: 'Delete a provider slug',
    async run(ctx, store, id) {
      const row = await visibleProvider(ctx, store, id);
      await store.repo.deleteProvider(row.id);
      store.invalidate();
      return { id: row.id, object: 'provider', deleted: true };
    },
  },
});
