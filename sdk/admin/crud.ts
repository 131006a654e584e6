import type * as v from 'valibot';
import type { RequestContext } from '../../core/index.js';
import type { SqlClient } from '../sql.js';
import { BY_REF, docsFor, listResponse, notFound, ok, parseBody, parseQuery, type AdminDoc, type AdminRoute } from './http.js';
import { workspaceFor, type Identity } from './identity.js';
import type { Paged, SqlTables } from './table.js';

/** What one operation of a stored resource says in the API reference. */
export interface OpDoc {
  /** One line: what the operation does, e.g. `Create a config`. */
  summary: string;
  /** More detail, in CommonMark. */
  description?: string;
  /** What `:id` is for this operation, when it differs from the resource's `params` (it takes a version suffix, say). */
  params?: Readonly<Record<string, string>>;
}

/**
 * The admin routes of one stored resource, from what differs between
 * resources: the routes' names, paths, scopes, reference entries, the parsing
 * of bodies and queries and the answer envelopes are the builder's. Every
 * operation is optional; its `run` does the resource's own work and returns
 * what to answer (a list op returns a page). Scopes are `<scope>.create`,
 * `.read`, `.update`, `.delete`.
 */
export interface CrudSpec<S, CB extends v.GenericSchema, UB extends v.GenericSchema, LQ extends v.GenericSchema, GQ extends v.GenericSchema = v.GenericSchema, F = undefined, FC = undefined> {
  /** Route names: `<name>.create`, `<name>.list`, … (`configs`). */
  name: string;
  /** Path under the base path (`/configs`); items at `<path>/:id` unless `item` says otherwise. */
  path: string;
  /**
   * The path of one item, for a resource under another (`/workspaces/:id/members/:userId`); default
   * `<path>/:id`. `key` names its last parameter, the id the operations get (default `id`).
   */
  item?: string;
  /** The name of the item path's last parameter, the id the operations get (default `id`). */
  key?: string;
  /** The API reference's tag (`Configs`). */
  tag: string;
  /** The scope resource; default `name` (stored guardrails use `configs`). */
  scope?: string;
  /** Scopes of their own for some operations (SCIM's mappings need `organisation.update` to create). */
  scopes?: Readonly<Partial<Record<CrudAccess, string>>>;
  /** Runs first on every route, before anything is looked up or parsed: what refuses the caller whatever the operation (`requireOrgLevel`). */
  guard?(ctx: RequestContext, access: CrudAccess): void;
  /** What `:id` is, for the reference; default {@link BY_REF}. */
  params?: Readonly<Record<string, string>>;
  /** `find`: what may refuse the caller whatever it sent (the parent it creates under, its authority), before the body is parsed. */
  create?: OpDoc & { body: CB; find?(ctx: RequestContext, service: S): Promise<FC>; run(ctx: RequestContext, service: S, body: v.InferOutput<CB>, found: FC): Promise<unknown> };
  /** `total`: the envelope also carries the count as `total` (the name some specs give `total_count`). */
  list?: OpDoc & { query: LQ; total?: boolean; run(ctx: RequestContext, service: S, query: v.InferOutput<LQ>): Promise<Paged<unknown>> };
  /** `query`: the strict query schema the item is read with (parsed before `run`). */
  get?: OpDoc & { query?: GQ; run(ctx: RequestContext, service: S, id: string, query: v.InferOutput<GQ>): Promise<unknown> };
  /**
   * `find`: looks the item up before the body is parsed, so what may refuse the caller whatever it sent
   * (a 404, a 403 or 409 on the item) comes before the 400 a broken body would get; `run` gets what it found.
   */
  update?: OpDoc & {
    body: UB;
    find?(ctx: RequestContext, service: S, id: string): Promise<F>;
    run(ctx: RequestContext, service: S, id: string, body: v.InferOutput<UB>, found: F): Promise<unknown>;
  };
  /**
   * `DELETE <path>/:id`: deletes or archives, as the resource does. `verb` is the route name's last part
   * (default: `archive` when the summary starts so, else `delete`).
   */
  remove?: OpDoc & { verb?: 'delete' | 'archive'; run(ctx: RequestContext, service: S, id: string): Promise<unknown> };
  /**
   * `GET <path>/:id/versions`: the versions, newest first, as `{ object: 'list', total_count, data }`. A run
   * that pages them returns a page (`total_count` is then the total) and gives the `query` it parses
   * (after finding the resource, so an unknown one is a 404 whatever the query), for the reference.
   */
  versions?: OpDoc & { query?: v.GenericSchema; run(ctx: RequestContext, service: S, id: string): Promise<readonly unknown[] | Paged<unknown>> };
}

/** What an operation does, as scopes name it: `read` for list, get and versions. */
export type CrudAccess = 'create' | 'read' | 'update' | 'delete';

/** The routes of {@link CrudSpec}, in the order create, list, get, versions, update, remove. */
export function crudRoutes<
  S,
  CB extends v.GenericSchema = v.GenericSchema,
  UB extends v.GenericSchema = v.GenericSchema,
  LQ extends v.GenericSchema = v.GenericSchema,
  GQ extends v.GenericSchema = v.GenericSchema,
  F = undefined,
  FC = undefined,
>(spec: CrudSpec<S, CB, UB, LQ, GQ, F, FC>): AdminRoute<S>[] {
  const doc = docsFor(spec.tag);
  const scopeOf = (access: CrudAccess) => spec.scopes?.[access] ?? `${spec.scope ?? spec.name}.${access}`;
  const params = spec.params ?? BY_REF;
  const item = spec.item ?? `${spec.path}/:id`;
  const key = spec.key ?? 'id';
  const more = (op: OpDoc, extra: Omit<AdminDoc, 'summary' | 'tags'>) =>
    doc(op.summary, { ...(op.description === undefined ? {} : { description: op.description }), ...extra, ...(op.params === undefined ? {} : { params: op.params }) });
  const routes: AdminRoute<S>[] = [];
  const { create, list, get, versions, update, remove } = spec;
  if (create) {
    routes.push({
      name: `${spec.name}.create`,
      method: 'POST',
      path: spec.path,
      scope: scopeOf('create'),
      doc: more(create, { body: create.body }),
      handler: async (ctx, s) => {
        const found = create.find === undefined ? (undefined as FC) : await create.find(ctx, s);
        return ok(await create.run(ctx, s, parseBody(ctx, create.body), found));
      },
    });
  }
  if (list) {
    routes.push({
      name: `${spec.name}.list`,
      method: 'GET',
      path: spec.path,
      scope: scopeOf('read'),
      doc: more(list, { query: list.query }),
      handler: async (ctx, s) => {
        const paged = await list.run(ctx, s, parseQuery(ctx, list.query));
        return list.total === true ? ok({ object: 'list', total: paged.total, total_count: paged.total, data: paged.data }) : listResponse(paged, (x) => x);
      },
    });
  }
  if (get) {
    const query = get.query;
    routes.push({
      name: `${spec.name}.get`,
      method: 'GET',
      path: item,
      scope: scopeOf('read'),
      doc: more(get, query === undefined ? { params } : { params, query }),
      handler: async (ctx, s) => ok(await get.run(ctx, s, ctx.params![key]!, (query === undefined ? undefined : parseQuery(ctx, query)) as v.InferOutput<GQ>)),
    });
  }
  if (versions) {
    routes.push({
      name: `${spec.name}.versions`,
      method: 'GET',
      path: `${item}/versions`,
      scope: scopeOf('read'),
      doc: more(versions, { params, ...(versions.query === undefined ? {} : { query: versions.query }) }),
      handler: async (ctx, s) => {
        const data = await versions.run(ctx, s, ctx.params![key]!);
        return 'total' in data ? listResponse(data, (x) => x) : ok({ object: 'list', total_count: data.length, data });
      },
    });
  }
  if (update) {
    routes.push({
      name: `${spec.name}.update`,
      method: 'PUT',
      path: item,
      scope: scopeOf('update'),
      doc: more(update, { params, body: update.body }),
      handler: async (ctx, s) => {
        const id = ctx.params![key]!;
        const found = update.find === undefined ? (undefined as F) : await update.find(ctx, s, id);
        return ok(await update.run(ctx, s, id, parseBody(ctx, update.body), found));
      },
    });
  }
  if (remove) {
    routes.push({ name: `${spec.name}.${remove.verb ?? removeVerb(remove.summary)}`, method: 'DELETE', path: item, scope: scopeOf('delete'), doc: more(remove, { params }), handler: async (ctx, s) => ok(await remove.run(ctx, s, ctx.params![key]!)) });
  }
  const guard = spec.guard;
  if (guard === undefined) return routes;
  return routes.map((route) => {
    const access = ACCESS[route.method]!;
    return {
      ...route,
      handler: async (ctx, s) => {
        guard(ctx, access);
        return route.handler(ctx, s);
      },
    };
  });
}

const ACCESS: Readonly<Record<string, CrudAccess>> = { POST: 'create', GET: 'read', PUT: 'update', DELETE: 'delete' };

/** `archive` when the summary says the resource is archived rather than deleted (its route name says so too). */
function removeVerb(summary: string): string {
  return /^archive/i.test(summary) ? 'archive' : 'delete';
}

/**
 * A workspace-owned resource by id or slug, as a caller may see it: in its
 * own workspace (a workspace key), or for an organisation-level key by id in
 * any workspace, or by slug in the workspace it acts in. Else a 404 that does
 * not tell "elsewhere" from "nowhere".
 */
export async function visibleInWorkspace<Row>(
  ctx: RequestContext,
  identity: Identity,
  ref: string,
  find: (workspaceId: string | null, ref: string) => Promise<Row | undefined>,
  noun: string,
): Promise<Row> {
  const own = ctx.auth?.workspaceId ?? null;
  const row = (await find(own, ref)) ?? (own === null ? await find(await workspaceFor(ctx, identity, undefined), ref) : undefined);
  if (row === undefined) throw notFound(noun, ref);
  return row;
}

/** A versioned resource's two tables: the resource (with its version counter) and its versions (keyed by `key`, `version`). */
export interface VersionedTables {
  /** The resource table (one row per resource). */
  table: string;
  /** The resource table's column holding its latest version number (`version`, `latest_version`), incremented for each new version. */
  counter: string;
  /** The versions table (one row per version, keyed by `key` and `version`). */
  versions: string;
  /** The versions table's column naming the resource, e.g. `prompt_id`. */
  key: string;
}

/** Inserts a resource and its first version in one transaction. */
export async function insertVersioned(tables: SqlTables, t: VersionedTables, row: Record<string, unknown>, version: Record<string, unknown>): Promise<void> {
  await tables.db().transaction(async (tx) => {
    await tables.insert(t.table, row, tx);
    await tables.insert(t.versions, { [t.key]: row.id, ...version }, tx);
  });
}

/**
 * Updates a versioned resource in one transaction: with `version`, a new version numbered from the
 * counter (never two with one number under concurrent writers), then `patch` on the resource; `read`
 * runs inside the same transaction, so the answer is the version this update made.
 */
export async function updateVersioned<T>(
  tables: SqlTables,
  t: VersionedTables,
  id: string,
  now: number,
  version: Record<string, unknown> | null,
  patch: Record<string, unknown>,
  read: (tx: SqlClient) => Promise<T>,
): Promise<T> {
  return tables.db().transaction(async (tx) => {
    if (version !== null) {
      const next = await tables.nextVersion(t.table, t.counter, id, now, tx);
      await tables.insert(t.versions, { [t.key]: id, version: next, ...version, created_at: now }, tx);
    }
    await tables.update(t.table, { id }, patch, tx);
    return read(tx);
  });
}
