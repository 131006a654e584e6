import * as v from 'valibot';
import { GatewayError, type RequestContext, type SealedJson } from '../../../sdk/index.js';
import { randomSlug } from '../keys.js';
import { checkStoredUrls } from '../../../sdk/admin/index.js';
import type { GuardrailRow, GuardrailWithBody } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { Name, PAGE_QUERY, Slug, conflict, iso, listResponse, notFound, ok, pageOf, parseQuery, parseValue, patchOf, workspaceFor, BY_REF, docsFor, type AdminRoute } from './http.js';

const doc = docsFor('Guardrails');

/*
 * Stored guardrails: a name and a guardrail entry of the config object, kept
 * in a workspace and named from configs by id (or slug). The body is flat,
 * as the spec writes an entry: `{ "name", "deny", "default.pii": { … } }`.
 * Their scopes are the configs' (see docs/admin-api.md: a guardrail is a part
 * of a config stored for reuse).
 */

/** Body fields that describe the stored guardrail rather than its entry. */
const CREATE_FIELDS = ['name', 'slug', 'workspace_id'] as const;
const UPDATE_FIELDS = ['name', 'status'] as const;
/** Fields answers carry: an entry may not use them as check ids. */
const RESERVED = new Set(['id', 'object', 'slug', 'name', 'workspace_id', 'status', 'version', 'created_at', 'updated_at', 'archived_at']);
/** At most this many ids in `?ids=`. */
const MAX_IDS = 100;

const CreateMeta = v.object({ name: Name, slug: v.optional(Slug), workspace_id: v.nullish(v.string()) });
const UpdateMeta = v.object({ name: v.optional(Name), status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')) });
const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  status: v.optional(v.picklist(['active', 'archived'], 'must be "active" or "archived"')),
  ids: v.optional(
    v.pipe(
      v.string(),
      v.description(`Only these guardrails: up to ${MAX_IDS} ids, comma-separated.`),
      v.transform((s) => [...new Set(s.split(',').map((x) => x.trim()))]),
      v.check((ids) => ids.every((id) => id !== '' && id.length <= 64), 'must be a comma-separated list of guardrail ids'),
      v.maxLength(MAX_IDS, `names at most ${MAX_IDS} ids`),
    ),
  ),
});

/** Splits a body into the stored guardrail's own fields and its entry (everything else). */
function split(body: Record<string, unknown>, own: readonly string[]): { meta: Record<string, unknown>; entry: Record<string, unknown> } {
  const meta: Record<string, unknown> = {};
  const entry: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(body)) (own.includes(k) ? meta : entry)[k] = value;
  return { meta, entry };
}

/** Validates the entry with the guardrails plugin's rules (every check's parameter schema); a bad one is a 400 naming the field. */
function checkEntry(cp: ControlPlane, entry: Record<string, unknown>): void {
  for (const key of Object.keys(entry)) {
    if (key === 'id') throw new GatewayError('invalid_request', "Invalid request body: 'id' is given by the gateway; a guardrail's body is a name and a guardrail entry.", { param: 'id' });
    if (RESERVED.has(key)) throw new GatewayError('invalid_request', `Invalid request body: '${key}' cannot be changed here.`, { param: key });
  }
  const issues = cp.guardrailValidator.check(entry);
  if (issues.length > 0) {
    const { path, message } = issues[0]!;
    throw new GatewayError('invalid_request', `Invalid request body: ${path === '' ? '' : `'${path}' `}${message}`, { param: path === '' ? null : path });
  }
}

/** A version to store: checked, its credentials (a webhook's headers) sealed; a mask sent back keeps what `previous` holds there. */
function entryVersion(cp: ControlPlane, guardrailId: string, entry: Record<string, unknown>, previous: { body: string; sealed: string | null } | null): SealedJson {
  checkEntry(cp, entry);
  checkStoredUrls(cp.upstream, entry, '', true);
  return cp.guardrailDocuments.seal(guardrailId, entry, previous);
}

function present(cp: ControlPlane, row: GuardrailRow, stored: { body: string; sealed: string | null }) {
  return {
    id: row.id,
    object: 'guardrail',
    slug: row.slug,
    name: row.name,
    workspace_id: row.workspace_id,
    status: row.status,
    version: row.version,
    ...cp.guardrailDocuments.masked(stored),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

/** A guardrail the caller may see: by id or slug in its workspace; organisation keys by id anywhere, or slug in the workspace they act in. */
async function visibleGuardrail(ctx: RequestContext, cp: ControlPlane, ref: string): Promise<GuardrailWithBody> {
  const own = ctx.auth?.workspaceId ?? null;
  const row = (await cp.repo.guardrail(own, ref)) ?? (own === null ? await cp.repo.guardrail(await workspaceFor(ctx, cp, undefined), ref) : undefined);
  if (row === undefined) throw notFound('guardrail', ref);
  return row;
}

export const guardrailRoutes: AdminRoute[] = [
  {
    name: 'guardrails.create',
    method: 'POST',
    path: '/guardrails',
    scope: 'configs.create',
    doc: doc('Store a guardrail', { body: CreateMeta, description: 'Besides `name`, `slug` and `workspace_id`, the body is a guardrail entry as in a config\'s `input_guardrails` (`deny`, `async`, and checks with their parameters), checked with every check\'s schema. Configs name it by id or slug.' }),
    async handler(ctx, cp) {
      const { meta, entry } = split(ctx.body ?? {}, CREATE_FIELDS);
      const m = parseValue(CreateMeta, meta);
      checkEntry(cp, entry);
      checkStoredUrls(cp.upstream, entry, '', true);
      const workspaceId = await workspaceFor(ctx, cp, m.workspace_id);
      const slug = m.slug ?? randomSlug(10);
      if ((await cp.repo.guardrail(workspaceId, slug)) !== undefined) throw conflict(`A guardrail with slug "${slug}" exists in this workspace.`, 'slug');
      const now = cp.now();
      const row: GuardrailRow = { id: `pg-${randomSlug(16)}`, workspace_id: workspaceId, slug, name: m.name, status: 'active', version: 1, created_at: now, updated_at: now, archived_at: null };
      const stored = entryVersion(cp, row.id, entry, null);
      await cp.repo.db().transaction(async (tx) => {
        await cp.repo.insert('cp_guardrails', { ...row }, tx);
        await cp.repo.insert('cp_guardrail_versions', { guardrail_id: row.id, version: 1, ...stored, created_at: now }, tx);
      });
      cp.invalidate();
      return ok(present(cp, row, stored));
    },
  },
  {
    name: 'guardrails.list',
    method: 'GET',
    path: '/guardrails',
    scope: 'configs.read',
    doc: doc('List stored guardrails', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = await workspaceFor(ctx, cp, q.workspace_id);
      const paged = await cp.repo.guardrails({ workspaceId, ids: q.ids, status: q.status }, pageOf(q));
      return listResponse(paged, (row) => present(cp, row, row));
    },
  },
  {
    name: 'guardrails.get',
    method: 'GET',
    path: '/guardrails/:id',
    scope: 'configs.read',
    doc: doc('Get a stored guardrail', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleGuardrail(ctx, cp, ctx.params!.id!);
      return ok(present(cp, row, row));
    },
  },
  {
    name: 'guardrails.versions',
    method: 'GET',
    path: '/guardrails/:id/versions',
    scope: 'configs.read',
    doc: doc('List a guardrail\'s versions', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleGuardrail(ctx, cp, ctx.params!.id!);
      const versions = await cp.repo.guardrailVersions(row.id);
      return ok({
        object: 'list',
        total_count: versions.length,
        data: versions.map((ver) => ({ object: 'guardrail-version', guardrail_id: row.id, version: ver.version, ...cp.guardrailDocuments.masked(ver), created_at: iso(ver.created_at) })),
      });
    },
  },
  {
    name: 'guardrails.update',
    method: 'PUT',
    path: '/guardrails/:id',
    scope: 'configs.update',
    doc: doc('Update a stored guardrail', { params: BY_REF, body: UpdateMeta, description: 'Besides `name` and `status`, the fields of a new guardrail entry, which makes a new version.' }),
    async handler(ctx, cp) {
      const row = await visibleGuardrail(ctx, cp, ctx.params!.id!);
      const { meta, entry } = split(ctx.body ?? {}, UPDATE_FIELDS);
      const m = parseValue(UpdateMeta, meta);
      // Any entry field replaces the whole entry, as a new version: a partial merge would leave checks nobody asked for.
      const stored = Object.keys(entry).length === 0 ? null : entryVersion(cp, row.id, entry, row);
      const now = cp.now();
      const patch = patchOf(m, ['name'], now);
      if (m.status !== undefined && m.status !== row.status) {
        patch.status = m.status;
        patch.archived_at = m.status === 'archived' ? now : null;
      }
      // Read back inside the transaction: the answer is the version this update made, not a later one a concurrent update committed.
      const updated = await cp.repo.db().transaction(async (tx) => {
        if (stored !== null) {
          // The counter is raised before it is read (the row locked), so concurrent updates cannot share a number.
          const next = await cp.repo.nextVersion('cp_guardrails', row.id, now, tx);
          await cp.repo.insert('cp_guardrail_versions', { guardrail_id: row.id, version: next, ...stored, created_at: now }, tx);
        }
        await cp.repo.update('cp_guardrails', { id: row.id }, patch, tx);
        return (await cp.repo.guardrail(null, row.id, tx))!;
      });
      cp.invalidate();
      return ok(present(cp, updated, updated));
    },
  },
  {
    name: 'guardrails.archive',
    method: 'DELETE',
    path: '/guardrails/:id',
    scope: 'configs.delete',
    doc: doc('Archive a stored guardrail', { params: BY_REF }),
    async handler(ctx, cp) {
      const row = await visibleGuardrail(ctx, cp, ctx.params!.id!);
      if (row.status !== 'archived') {
        const now = cp.now();
        await cp.repo.update('cp_guardrails', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        cp.invalidate();
      }
      const updated = (await cp.repo.guardrail(null, row.id))!;
      return ok(present(cp, updated, updated));
    },
  },
];
