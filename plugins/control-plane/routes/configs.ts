import * as v from 'valibot';
import { GatewayError, plainObject, type RequestContext, type SealedJson } from '../../../sdk/index.js';
import { randomSlug } from '../keys.js';
import { checkStoredUrls } from '../../../sdk/admin/index.js';
import type { ConfigRow, ConfigVersionRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import {
  patchOf,
  Name,
  PAGE_QUERY,
  Slug,
  conflict,
  iso,
  listResponse,
  notFound,
  ok,
  pageOf,
  parseBody,
  parseQuery,
  workspaceFor,
  BY_REF, docsFor,
  type AdminRoute,
} from './http.js';

const doc = docsFor('Configs');

const CreateBody = v.strictObject({ name: Name, slug: v.optional(Slug), config: plainObject('must be a config object'), workspace_id: v.nullish(v.string()) });
const UpdateBody = v.strictObject({
  name: v.optional(Name),
  config: v.optional(plainObject('must be a config object')),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
});
const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()) });

/** Validates with the inline-config schema (the config plugin's parser); a bad config is a 400 whose param is `config.<path>`. */
function checkConfig(cp: ControlPlane, config: Record<string, unknown>): void {
  const parser = cp.configParser;
  const issues = parser.check(config);
  if (issues.length > 0) {
    const path = issues[0]!.path;
    throw new GatewayError('invalid_request', `Invalid request body: ${parser.error(issues).message}`, { param: path === '' ? 'config' : `config.${path}` });
  }
}

/** A version to store: checked, its credentials sealed (a mask sent back keeps the credential `previous` holds there). */
function configVersion(cp: ControlPlane, configId: string, config: Record<string, unknown>, previous: ConfigVersionRow | null): SealedJson {
  checkConfig(cp, config);
  checkStoredUrls(cp.upstream, config, 'config');
  return cp.configDocuments.seal(configId, config, previous, 'config');
}

function presentConfig(cp: ControlPlane, row: ConfigRow, version?: ConfigVersionRow) {
  return {
    id: row.id,
    object: 'config',
    slug: row.slug,
    name: row.name,
    workspace_id: row.workspace_id,
    status: row.status,
    version: row.version,
    ...(version === undefined ? {} : { config: cp.configDocuments.masked(version) }),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

async function visibleConfig(ctx: RequestContext, cp: ControlPlane, ref: string): Promise<ConfigRow> {
  const own = ctx.auth?.workspaceId ?? null;
  // Organisation keys: any config by id, or by slug in the workspace they act in.
  const row = (await cp.repo.config(own, ref)) ?? (own === null ? await cp.repo.config(await workspaceFor(ctx, cp, undefined), ref) : undefined);
  if (row === undefined) throw notFound('config', ref);
  return row;
}

export const configRoutes: AdminRoute[] = [
  {
    name: 'configs.create',
    method: 'POST',
    path: '/configs',
    scope: 'configs.create',
    doc: doc('Save a config', { body: CreateBody, description: '`config` is a config object, checked as an inline `x-gateway-config` is; requests name it by id.' }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, CreateBody);
      checkConfig(cp, body.config);
      checkStoredUrls(cp.upstream, body.config, 'config');
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const slug = body.slug ?? randomSlug(10);
      if ((await cp.repo.config(workspaceId, slug)) !== undefined) throw conflict(`A config with slug "${slug}" exists in this workspace.`, 'slug');
      const now = cp.now();
      const row: ConfigRow = { id: `pc-${randomSlug(16)}`, workspace_id: workspaceId, slug, name: body.name, status: 'active', version: 1, created_at: now, updated_at: now };
      const version: ConfigVersionRow = { config_id: row.id, version: 1, ...configVersion(cp, row.id, body.config, null), created_at: now };
      await cp.repo.db().transaction(async (tx) => {
        await cp.repo.insert('cp_configs', { ...row }, tx);
        await cp.repo.insert('cp_config_versions', { ...version }, tx);
      });
      cp.invalidate();
      return ok(presentConfig(cp, row, version));
    },
  },
  {
    name: 'configs.list',
    method: 'GET',
    path: '/configs',
    scope: 'configs.read',
    doc: doc('List saved configs', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = await workspaceFor(ctx, cp, q.workspace_id);
      return listResponse(await cp.repo.configs(workspaceId, pageOf(q)), (row) => presentConfig(cp, row));
    },
  },
  {
    name: 'configs.get',
    method: 'GET',
    path: '/configs/:id',
    scope: 'configs.read',
    doc: doc('Get a saved config', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleConfig(ctx, cp, ctx.params!.id!);
      return ok(presentConfig(cp, row, await cp.repo.configVersion(row.id, row.version)));
    },
  },
  {
    name: 'configs.versions',
    method: 'GET',
    path: '/configs/:id/versions',
    scope: 'configs.read',
    doc: doc('List a config\'s versions', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleConfig(ctx, cp, ctx.params!.id!);
      const versions = await cp.repo.configVersions(row.id);
      return ok({
        object: 'list',
        total_count: versions.length,
        data: versions.map((ver) => ({ object: 'config-version', config_id: row.id, version: ver.version, config: cp.configDocuments.masked(ver), created_at: iso(ver.created_at) })),
      });
    },
  },
  {
    name: 'configs.update',
    method: 'PUT',
    path: '/configs/:id',
    scope: 'configs.update',
    doc: doc('Update a saved config', { params: BY_REF, body: UpdateBody, description: 'A new `config` makes a new version.' }),
    async handler(ctx, cp) {
      const row = await visibleConfig(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, UpdateBody);
      const stored = body.config === undefined ? null : configVersion(cp, row.id, body.config, (await cp.repo.configVersion(row.id, row.version)) ?? null);
      const now = cp.now();
      const patch = patchOf(body, ['name', 'status'], now);
      // Read back inside the transaction: the answer is the version this update made, not a later one a concurrent update committed.
      const [updated, version] = await cp.repo.db().transaction(async (tx) => {
        if (stored !== null) {
          // Each update of the body is a new version; the counter is raised before it is read (the row locked), so
          // concurrent updates cannot share a number.
          const next = await cp.repo.nextVersion('cp_configs', row.id, now, tx);
          await cp.repo.insert('cp_config_versions', { config_id: row.id, version: next, ...stored, created_at: now }, tx);
        }
        await cp.repo.update('cp_configs', { id: row.id }, patch, tx);
        const current = (await cp.repo.config(null, row.id, tx))!;
        return [current, await cp.repo.configVersion(current.id, current.version, tx)] as const;
      });
      cp.invalidate();
      return ok(presentConfig(cp, updated, version));
    },
  },
  {
    name: 'configs.delete',
    method: 'DELETE',
    path: '/configs/:id',
    scope: 'configs.delete',
    doc: doc('Delete a saved config', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleConfig(ctx, cp, ctx.params!.id!);
      await cp.repo.deleteConfig(row.id);
      cp.invalidate();
      return ok({ id: row.id, object: 'config', deleted: true });
    },
  },
];
