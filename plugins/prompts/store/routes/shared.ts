import * as v from 'valibot';
import { GatewayError, MAX_PROMPT_VERSION, parsePromptRef, type PromptSelector, type RequestContext } from '../../../../sdk/index.js';
import {
  conflict,
  docsFor,
  insertVersioned,
  iso,
  mapPage,
  ok,
  PAGE_QUERY,
  pageOf,
  parseBody,
  parseQuery,
  randomSlug,
  updateVersioned,
  visibleInWorkspace,
  workspaceFor,
  type AdminRoute,
  type CrudSpec,
  type Paged,
} from '../../../../sdk/admin/index.js';
import { versionNumber } from '../releases.js';
import type { VersionedHead, VersionedRows } from '../repository.js';
import type { PromptStore } from '../service.js';

/**
 * What the routes of stored prompts and of their partials share: both are
 * versioned the same way (numbered versions, one published, archived rather
 * than deleted), so reading, listing, publishing and archiving are written
 * once, for a {@link Kind}.
 */

/** Every route here is under this tag, with the `prompts.*` scopes. */
const doc = docsFor('Prompts');

const Status = v.picklist(['active', 'archived'], 'must be "active" or "archived"');
const ListQuery = v.strictObject({
  ...PAGE_QUERY,
  workspace_id: v.optional(v.string()),
  status: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => [...new Set(s.split(',').map((x) => x.trim()))]),
      v.array(Status, 'must be a comma-separated list of "active" and "archived"'),
    ),
  ),
});
const PageQuery = v.strictObject({ ...PAGE_QUERY });
const PublishBody = v.strictObject({
  version: v.pipe(v.number('is required and must be a version number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(MAX_PROMPT_VERSION)),
});

/** What tells prompts and partials apart in the routes they share: their rows, names and answers. */
export interface Kind<R extends VersionedHead, V extends { version: number }> {
  rows(store: PromptStore): VersionedRows<R, V>;
  /** In a 404: `prompt`, `prompt partial`. */
  noun: string;
  /** Starting a sentence: `Prompt`, `Prompt partial`. */
  title: string;
  /** The answers' `object` (`prompt`, `prompt-partial`; a version's: `prompt-version`, …). */
  object: string;
  /** The row's own fields in answers, after `object`. */
  own(row: R): Record<string, unknown>;
  /** How a publish's 404 names the row: a prompt's slug, a partial's name. */
  label(row: R): string;
  /** What a version holds, in answers. */
  fields(version: V): Record<string, unknown>;
  /** Checks a version before it is published. */
  beforePublish?(store: PromptStore, row: R, version: V): Promise<void>;
}

/** `id`, `id@latest` or `id@N` from the path; anything else after `@` is a 400. */
function refOf(raw: string): { ref: string; selector: PromptSelector } {
  const parsed = parsePromptRef(raw);
  if (parsed === null) {
    throw new GatewayError('invalid_request', `"${raw.slice(0, 128)}" is not a reference: use the id or slug, optionally followed by @latest or @<version number>.`, { param: 'id' });
  }
  return parsed;
}

/** A row as answers show it; with `version`, the version's number and content too. */
function present<R extends VersionedHead, V extends { version: number }>(kind: Kind<R, V>, row: R, version?: V) {
  return {
    id: row.id,
    object: kind.object,
    ...kind.own(row),
    workspace_id: row.workspace_id,
    status: row.status,
    ...(version === undefined ? {} : { version: version.version }),
    latest_version: row.latest_version,
    published_version: row.published_version,
    ...(version === undefined ? {} : kind.fields(version)),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

/** The row a caller may see (a workspace key's own workspace; by id any, or by slug the one it acts in, for organisation keys). */
function visible<R extends VersionedHead, V extends { version: number }>(kind: Kind<R, V>, ctx: RequestContext, store: PromptStore, ref: string): Promise<R> {
  return visibleInWorkspace(ctx, store.identity, ref, (workspaceId, r) => kind.rows(store).find(workspaceId, r), kind.noun);
}

/** A row the caller may see and change: a 409 when it is archived. */
async function editable<R extends VersionedHead, V extends { version: number }>(kind: Kind<R, V>, ctx: RequestContext, store: PromptStore, ref: string): Promise<R> {
  const row = await visible(kind, ctx, store, ref);
  if (row.status !== 'active') throw conflict(`${kind.title} "${row.id}" is archived: it can no longer change.`, 'id');
  return row;
}

/** The row again, after a write, with `version`. */
async function reread<R extends VersionedHead, V extends { version: number }>(kind: Kind<R, V>, store: PromptStore, id: string, version: V | undefined): Promise<unknown> {
  return present(kind, (await kind.rows(store).find(null, id))!, version);
}

/**
 * Inserts a new row (`id` with `prefix`, its own columns `own`) and its version 1 (`columns`),
 * published; answers them.
 */
export async function createFirst<R extends VersionedHead, V extends { version: number }>(
  kind: Kind<R, V>,
  store: PromptStore,
  prefix: string,
  workspaceId: string,
  own: Record<string, unknown>,
  columns: Record<string, unknown>,
): Promise<unknown> {
  const now = store.now();
  const t = kind.rows(store).t;
  const row = { id: `${prefix}-${randomSlug(16)}`, workspace_id: workspaceId, ...own, status: 'active', latest_version: 1, published_version: 1, created_at: now, updated_at: now, archived_at: null };
  const first = { [t.key]: row.id, version: 1, ...columns, created_at: now };
  await insertVersioned(store.repo.tables, t, row, first);
  store.invalidate();
  return present(kind, row as unknown as R, first as unknown as V);
}

/**
 * Adds the next version of a row (not published) with `columns`, and sets `patch` on the row, in one
 * transaction; answers the row with the version made.
 */
async function addVersion<R extends VersionedHead, V extends { version: number }>(
  kind: Kind<R, V>,
  store: PromptStore,
  id: string,
  columns: Record<string, unknown>,
  patch: Record<string, unknown> = {},
): Promise<unknown> {
  const rows = kind.rows(store);
  const added = await updateVersioned(store.repo.tables, rows.t, id, store.now(), columns, patch, async (tx) => (await rows.version(id, (await rows.find(null, id, tx))!.latest_version, tx))!);
  store.invalidate();
  return reread(kind, store, id, added);
}

/**
 * The update operation of a kind, for `crudRoutes`: a new version (not published) of a row the caller
 * may change (found before the body is read: a 404 or a 409 whatever it sent). `make` gives the
 * version's columns (and columns of the row to set, a rename) from the body and, for a patch
 * (`patch: true`), the latest version.
 */
export function updateOp<R extends VersionedHead, V extends { version: number }, B extends v.GenericSchema<unknown, { patch?: boolean }>>(
  kind: Kind<R, V>,
  op: { summary: string; description: string; body: B },
  make: (ctx: RequestContext, store: PromptStore, row: R, body: v.InferOutput<B>, latest: V | undefined) => Promise<{ columns: Record<string, unknown>; patch?: Record<string, unknown> }>,
): NonNullable<CrudSpec<PromptStore, v.GenericSchema, B, v.GenericSchema, v.GenericSchema, R>['update']> {
  return {
    ...op,
    find: (ctx, store, id) => editable(kind, ctx, store, id),
    async run(ctx, store, _id, body, row) {
      const latest = body.patch === true ? await kind.rows(store).version(row.id, row.latest_version) : undefined;
      const made = await make(ctx, store, row, body, latest);
      return addVersion(kind, store, row.id, made.columns, made.patch);
    },
  };
}

/** What differs between the kinds' list, get, versions and archive routes: their reference entries. */
interface OpDocs {
  list: string;
  get: string;
  /** What `:id` is for `get`, when not the default. */
  getParams?: Readonly<Record<string, string>>;
  getDescription?: string;
  versions: string;
  remove: string;
}

/** The list, get, versions and archive operations of a kind, for `crudRoutes`. */
export function versionedOps<R extends VersionedHead, V extends { version: number }>(
  kind: Kind<R, V>,
  docs: OpDocs,
): Pick<CrudSpec<PromptStore, v.GenericSchema, v.GenericSchema, typeof ListQuery>, 'list' | 'get' | 'versions' | 'remove'> {
  return {
    list: {
      summary: docs.list,
      query: ListQuery,
      async run(ctx, store, q): Promise<Paged<unknown>> {
        const workspaceId = await workspaceFor(ctx, store.identity, q.workspace_id);
        const page = await kind.rows(store).list(workspaceId, q.status ?? ['active'], pageOf(q));
        return mapPage(page, (row) => present(kind, row));
      },
    },
    get: {
      summary: docs.get,
      ...(docs.getDescription === undefined ? {} : { description: docs.getDescription }),
      ...(docs.getParams === undefined ? {} : { params: docs.getParams }),
      async run(ctx, store, id) {
        const { ref, selector } = refOf(id);
        const row = await visible(kind, ctx, store, ref);
        const number = versionNumber(row, selector);
        const version = number > row.latest_version ? undefined : await kind.rows(store).version(row.id, number);
        if (version === undefined) throw new GatewayError('not_found', `${kind.title} "${ref.slice(0, 128)}" has no version ${number} (its latest is ${row.latest_version}).`, { param: 'id' });
        return present(kind, row, version);
      },
    },
    versions: {
      summary: docs.versions,
      query: PageQuery,
      async run(ctx, store, id) {
        const row = await visible(kind, ctx, store, id);
        const rows = kind.rows(store);
        const page = await rows.versions(row.id, pageOf(parseQuery(ctx, PageQuery)));
        const data = page.data.map((version) => ({
          object: `${kind.object}-version`,
          [rows.t.key]: row.id,
          version: version.version,
          published: version.version === row.published_version,
          ...kind.fields(version),
        }));
        return { total: page.total, data };
      },
    },
    remove: {
      summary: docs.remove,
      verb: 'delete',
      async run(ctx, store, id) {
        const row = await visible(kind, ctx, store, id);
        if (row.status === 'active') {
          const now = store.now();
          await kind.rows(store).update(row.id, { status: 'archived', archived_at: now, updated_at: now });
          store.invalidate();
        }
        const archived = (await kind.rows(store).find(null, row.id))!;
        return present(kind, archived, await kind.rows(store).version(row.id, archived.published_version));
      },
    },
  };
}

/**
 * The routes `crudRoutes` built for a kind, with `POST <path>/:id/publish` (which makes a version the
 * one callers get) before the archive route, the order they had before `crudRoutes`.
 */
export function withPublish<R extends VersionedHead, V extends { version: number }>(
  routes: AdminRoute<PromptStore>[],
  kind: Kind<R, V>,
  publish: { name: string; path: string; summary: string; params: Readonly<Record<string, string>> },
): AdminRoute<PromptStore>[] {
  const route: AdminRoute<PromptStore> = {
    name: publish.name,
    method: 'POST',
    path: publish.path,
    scope: 'prompts.publish',
    doc: doc(publish.summary, { params: publish.params, body: PublishBody }),
    async handler(ctx, store) {
      const row = await editable(kind, ctx, store, ctx.params!.id!);
      const { version: number } = parseBody(ctx, PublishBody);
      const version = number > row.latest_version ? undefined : await kind.rows(store).version(row.id, number);
      if (version === undefined) throw new GatewayError('not_found', `${kind.title} "${kind.label(row)}" has no version ${number} (its latest is ${row.latest_version}).`, { param: 'version' });
      await kind.beforePublish?.(store, row, version);
      await kind.rows(store).update(row.id, { published_version: number, updated_at: store.now() });
      store.invalidate();
      return ok(await reread(kind, store, row.id, version));
    },
  };
  return [...routes.slice(0, -1), route, ...routes.slice(-1)];
}
