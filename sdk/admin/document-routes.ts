import type * as v from 'valibot';
import type { RequestContext } from '../../core/index.js';
import { crudRoutes, type OpDoc } from './crud.js';
import type { DocumentStore } from './documents.js';
import { pageOf, type AdminRoute } from './http.js';
import { workspaceFor } from './identity.js';
import { mapPage } from './table.js';

/** A body schema whose entries are the resource's own fields (what is not one of them is the document, when it sits beside them). */
type FieldsSchema<O> = v.GenericSchema<unknown, O> & { readonly entries: Readonly<Record<string, unknown>> };

interface CreateFields {
  name: string;
  slug?: string;
  workspace_id?: string | null;
}
interface UpdateFields {
  name?: string;
  status?: string;
}
interface ListFields {
  current_page?: number;
  page_size?: number;
  workspace_id?: string;
  ids?: readonly string[];
  status?: string;
}

/** What differs between two stored document resources' routes: names, reference entries, body and query schemas. */
export interface DocumentRoutesSpec<CO extends CreateFields, UO extends UpdateFields, LO extends ListFields> {
  /** Route names: `<name>.create`, … (`configs`). */
  name: string;
  /** Path under the base path (`/configs`). */
  path: string;
  /** The API reference's tag. */
  tag: string;
  /** The scope resource; default `name`. */
  scope?: string;
  /** `POST <path>`: its reference entry and the schema of the resource's own fields in the body. */
  create: OpDoc & { body: FieldsSchema<CO> };
  /** `GET <path>`: its reference entry and the query schema (paging, `workspace_id`, `status`, …). */
  list: OpDoc & { query: v.GenericSchema<unknown, LO> };
  /** `GET <path>/:id`: its reference entry. */
  get: OpDoc;
  /** `GET <path>/:id/versions`: its reference entry. */
  versions: OpDoc;
  /** `PUT <path>/:id`: its reference entry and the schema of the resource's own fields in the body. */
  update: OpDoc & { body: FieldsSchema<UO> };
  /** `Delete …` or `Archive …`, as the store does ({@link DocumentKind.archives}). */
  remove: OpDoc;
}

/**
 * The admin routes of a {@link DocumentStore}: create, list, get, versions,
 * update and delete (or archive), built with `crudRoutes`. The document is
 * the body's `field`, or, when the resource has none, every key of the body
 * that is not one of the resource's own fields (those of the op's schema).
 */
export function documentRoutes<V, CO extends CreateFields, UO extends UpdateFields, LO extends ListFields>(spec: DocumentRoutesSpec<CO, UO, LO>): AdminRoute<DocumentStore<V>>[] {
  const documentOf = (s: DocumentStore<V>, ctx: RequestContext, body: CO | UO, schema: FieldsSchema<CO | UO>): Record<string, unknown> | undefined => {
    const field = s.spec.field;
    if (field !== undefined) return (body as Record<string, unknown>)[field] as Record<string, unknown> | undefined;
    return Object.fromEntries(Object.entries(ctx.body ?? {}).filter(([k]) => !Object.hasOwn(schema.entries, k)));
  };
  return crudRoutes<DocumentStore<V>, FieldsSchema<CO>, FieldsSchema<UO>, v.GenericSchema<unknown, LO>>({
    name: spec.name,
    path: spec.path,
    tag: spec.tag,
    scope: spec.scope,
    create: { ...spec.create, run: async (ctx, s, body) => s.present(await s.create(ctx, body, documentOf(s, ctx, body, spec.create.body) ?? {})) },
    list: {
      ...spec.list,
      async run(ctx, s, q) {
        const workspaceId = await workspaceFor(ctx, s.identity, q.workspace_id);
        const paged = await s.list({ workspaceId, ids: q.ids, status: q.status }, pageOf(q));
        return mapPage(paged, (row) => s.present(row, s.spec.listBodies));
      },
    },
    get: { ...spec.get, run: async (ctx, s, id) => s.present(await s.visible(ctx, id)) },
    versions: { ...spec.versions, run: async (ctx, s, id) => s.versions(await s.visible(ctx, id)) },
    update: {
      ...spec.update,
      async run(ctx, s, id, body) {
        const row = await s.visible(ctx, id);
        const document = documentOf(s, ctx, body, spec.update.body);
        // Beside the resource's fields, any document field replaces the whole document, as a new version: a partial merge would keep what nobody asked for.
        const replaces = document !== undefined && (s.spec.field !== undefined || Object.keys(document).length > 0);
        return s.present(await s.update(row, body, replaces ? document : undefined));
      },
    },
    remove: { ...spec.remove, run: async (ctx, s, id) => s.remove(await s.visible(ctx, id)) },
  });
}
