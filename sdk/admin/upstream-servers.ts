import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import type { RequestContext, UpstreamClient } from '../../core/index.js';
import { crudRoutes } from './crud.js';
import { BY_ID, Description, isOrgLevel, iso, Name, notFound, PAGE_QUERY, pageOf, patchOf, type AdminRoute } from './http.js';
import { workspaceFor, type Identity } from './identity.js';
import { mapPage, type Page, type Paged, type SqlTables } from './table.js';
import type { SecretBox } from '../secret-box.js';
import type { UpstreamAuth } from '../tokens.js';
import { checkUpstreamUrl, openAuth, presentAuth, sealAuth, TimeoutField, UrlField, type AuthColumns, type AuthInput } from './upstream-auth.js';

/**
 * Upstream servers that a workspace registers for the gateway to serve under
 * a path of its own: MCP servers (`/v1/mcp/{id}`, the `mcp` plugin) and A2A
 * agents (`/v1/a2a/{id}`, the `a2a` plugin). Each is a URL, how the gateway
 * authenticates there, a timeout and a status, plus fields of its kind; they
 * are archived, never deleted (the log keeps naming their ids). Their admin
 * routes are built here from what differs between the kinds.
 */

/** The columns every kind of upstream server has. */
export interface UpstreamServerRow extends AuthColumns {
  /** The server's id. */
  id: string;
  /** The organisation it belongs to. */
  organisation_id: string;
  /** The workspace it belongs to. */
  workspace_id: string;
  /** Its name, for people. */
  name: string;
  /** An optional description. */
  description: string | null;
  /** The upstream URL the gateway forwards to (checked against the outbound host policy when written). */
  url: string;
  /** How long one forwarded request may wait for its answer, in ms; null: the plugin's default. */
  request_timeout_ms: number | null;
  /** `active`, or `archived` (not served). */
  status: 'active' | 'archived';
  /** When it was created (epoch ms). */
  created_at: number;
  /** When it last changed (epoch ms). */
  updated_at: number;
  /** When it was archived (epoch ms); null while active. */
  archived_at: number | null;
}

/**
 * `CREATE TABLE` for one kind's servers: the columns of {@link UpstreamServerRow} with the kind's own (`own`:
 * lines of `name TYPE,`, the timeout among them) after the credentials, as the kinds' first migrations wrote them.
 * Frozen, as applied migrations are: a change to these tables is a new migration of each kind, never an edit here.
 */
export function upstreamServerTable(table: string, own: string): string {
  return `CREATE TABLE ${table} (
  id TEXT PRIMARY KEY,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  url TEXT NOT NULL,
  auth_type TEXT NOT NULL,
  auth_header TEXT,
  auth_secret TEXT,
  auth_masked TEXT,
  ${own.trim()}
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
);
CREATE INDEX ${table}_workspace ON ${table} (workspace_id, status)`;
}

/** The statements on one kind's table that its routes and its request path share. */
export class UpstreamServerTable<Row extends UpstreamServerRow> {
  /**
   * @param noun what a 404 calls a server of the table (`MCP server`)
   * @param listColumns what a list reads (default every column): a large column can be read as NULL there
   */
  constructor(
    /** The statements on the store. */
    readonly tables: SqlTables,
    /** The kind's table, e.g. `cp_mcp_servers`. */
    readonly table: string,
    readonly noun: string,
    private readonly listColumns = '*',
  ) {}

  /** A server by id, whatever its workspace and status. */
  byId(id: string): Promise<Row | undefined> {
    return this.tables.get<Row>(`SELECT * FROM ${this.table} WHERE id = ?`, [id]);
  }

  /** The server `id` as the caller may see it (any status): another workspace's is a 404 to a workspace key, as if there were none. */
  async visible(ctx: RequestContext, id: string): Promise<Row> {
    const row = await this.byId(id);
    const own = ctx.auth?.workspaceId ?? null;
    if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound(this.noun, id);
    return row;
  }

  /** One workspace's servers (every workspace's for null), optionally of one status, oldest first. */
  page(filter: { workspaceId: string | null; status?: string }, page: Page): Promise<Paged<Row>> {
    const where = Object.entries({ workspace_id: filter.workspaceId ?? undefined, status: filter.status }).filter(([, value]) => value !== undefined);
    const sql = where.length === 0 ? '' : ` WHERE ${where.map(([column]) => `${column} = ?`).join(' AND ')}`;
    return this.tables.paged<Row>(`FROM ${this.table}${sql}`, where.map(([, value]) => value), 'created_at, id', page, this.listColumns);
  }

  /** Inserts a new server's row. */
  insert(row: Row): Promise<void> {
    return this.tables.insert(this.table, { ...row } as Record<string, unknown>);
  }

  /** Sets the `patch` columns of server `id`; resolves with the number of rows changed (0: no such server). */
  update(id: string, patch: Record<string, unknown>): Promise<number> {
    return this.tables.update(this.table, { id }, patch);
  }
}

/** What the request path reads of every kind of server. */
export interface UpstreamServerConfig {
  /** The server's id. */
  id: string;
  /** The workspace it belongs to. */
  workspaceId: string;
  /** Its name, for people. */
  name: string;
  /** The upstream URL to forward to. */
  url: string;
  /** How to authenticate there, secrets opened. Never log it. */
  auth: UpstreamAuth;
  /** How long one forwarded request may wait for its answer; null: the plugin's default. */
  requestTimeoutMs: number | null;
}

/**
 * A server as the request path needs it, its secret opened (sealed for `aad`).
 * @throws GatewayError 503 naming `what` when the secret cannot be opened with this gateway's key.
 */
export function openServer(box: SecretBox, row: UpstreamServerRow, aad: string, what: string): UpstreamServerConfig {
  return { id: row.id, workspaceId: row.workspace_id, name: row.name, url: row.url, auth: openAuth(box, row, aad, what), requestTimeoutMs: row.request_timeout_ms };
}

/** What the routes of a kind need of its plugin's service. */
export interface UpstreamServerService<Row extends UpstreamServerRow> {
  /** The control plane's identity service (workspaces, the store, the encryption key). */
  readonly identity: Identity;
  /** The pooled client: a URL is checked against the outbound host policy when it is written. */
  readonly upstream: UpstreamClient;
  /** The statements on the kind's table. */
  readonly servers: UpstreamServerTable<Row>;
}

/** `status` of a server, in an update and in a list's query. */
export const UpstreamServerStatus = v.picklist(['active', 'archived'], 'must be "active" or "archived"');

/** One kind of upstream server: what its routes do differently from the other kinds'. */
export interface UpstreamServerKind<Row extends UpstreamServerRow, S extends UpstreamServerService<Row>, E extends v.ObjectEntries> {
  /** Route names and scope resource (`mcp_servers`: `admin.mcp_servers.create`, `mcp_servers.create`, …). */
  name: string;
  /** Path under the base path (`/mcp-servers`); a server at `<path>/:id`. */
  path: string;
  /** The API reference's tag. */
  tag: string;
  /** `object` of its answers. */
  object: string;
  /** Where the gateway serves it, under the base path: `/<serves>/{id}`, its answers' `endpoint`. */
  serves: string;
  /** How the gateway may authenticate there (`McpAuthSchema`, `AgentAuthSchema`). */
  auth: v.GenericSchema<unknown, AuthInput>;
  /** Its secret is sealed for `<aad>:<id>`. */
  aad: string;
  /** Whether its table keeps an OAuth client (the `oauth` column). */
  oauth: boolean;
  /** Body fields of its own, in both the create and the update body (an update changes those it sends). */
  fields: E;
  /** Its own columns from a body: every one on create (`row` null), those the body changes on update. Throws the 400 of a bad value. */
  columns?(service: S, body: v.InferOutput<v.ObjectSchema<E, undefined>>, row: Row | null): Record<string, unknown>;
  /** Columns holding what was learnt from the server (its card): null on create, and again once its `url` or `auth` changes. */
  learnt?: readonly string[];
  /** Its own fields in answers (after `auth`). */
  present?(row: Row): Record<string, unknown>;
  /** Ends what callers hold on the server (sessions, tokens) before it moves (a new `url` or `auth`) or is archived. */
  retire?(service: S, row: Row): Promise<unknown>;
  /** The reference's summaries (and the create route's description). */
  docs: { create: { summary: string; description: string }; list: string; get: string; update: string; remove: string };
}

/** The common fields of a create body, as parsed. */
interface CreateFields {
  name: string;
  description?: string | null;
  url: string;
  auth: AuthInput;
  request_timeout_ms?: number | null;
  workspace_id?: string | null;
}

/** The common fields of an update body, as parsed. */
interface UpdateFields {
  name?: string;
  description?: string | null;
  url?: string;
  auth?: AuthInput;
  request_timeout_ms?: number | null;
  status?: 'active' | 'archived';
}

/**
 * The admin routes of a kind of upstream server: create, list, get, update
 * and delete (which archives), with the kind's fields, columns and answers.
 * Scopes are `<name>.create`, `.read`, `.update`, `.delete`; a server is named
 * by id only, and another workspace's is a 404 to a workspace key.
 */
export function upstreamServerRoutes<Row extends UpstreamServerRow, S extends UpstreamServerService<Row>, E extends v.ObjectEntries>(kind: UpstreamServerKind<Row, S, E>): AdminRoute<S>[] {
  type Own = v.InferOutput<v.ObjectSchema<E, undefined>>;
  const CreateBody = v.strictObject({
    name: Name,
    description: Description,
    url: UrlField,
    auth: v.optional(kind.auth, { type: 'none' }),
    ...kind.fields,
    request_timeout_ms: v.nullish(TimeoutField),
    workspace_id: v.nullish(v.string()),
  }) as unknown as v.GenericSchema<unknown, CreateFields & Own>;
  const UpdateBody = v.strictObject({
    name: v.optional(Name),
    description: Description,
    url: v.optional(UrlField),
    auth: v.optional(kind.auth),
    ...kind.fields,
    request_timeout_ms: v.nullish(TimeoutField),
    status: v.optional(UpstreamServerStatus),
  }) as unknown as v.GenericSchema<unknown, UpdateFields & Own>;
  const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()), status: v.optional(UpstreamServerStatus) });
  const learnt: Record<string, null> = Object.fromEntries((kind.learnt ?? []).map((column) => [column, null]));

  const visible = (ctx: RequestContext, s: S, id: string): Promise<Row> => s.servers.visible(ctx, id);
  const present = (ctx: RequestContext, row: Row) => {
    // Where the gateway serves it: under the base path the admin route was reached at.
    const at = ctx.path.indexOf(kind.path);
    return {
      id: row.id,
      object: kind.object,
      name: row.name,
      description: row.description,
      url: row.url,
      workspace_id: row.workspace_id,
      auth: presentAuth(row),
      ...kind.present?.(row),
      request_timeout_ms: row.request_timeout_ms,
      status: row.status,
      endpoint: `${at === -1 ? '' : ctx.path.slice(0, at)}/${kind.serves}/${row.id}`,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      archived_at: iso(row.archived_at),
    };
  };
  const authColumns = (s: S, auth: AuthInput, id: string): AuthColumns => {
    const { oauth, ...columns } = sealAuth(s.identity.box, auth, `${kind.aad}:${id}`);
    return kind.oauth ? { ...columns, oauth } : columns;
  };
  const reread = async (ctx: RequestContext, s: S, id: string) => present(ctx, (await s.servers.byId(id))!);

  return crudRoutes<S, typeof CreateBody, typeof UpdateBody, typeof ListQuery>({
    name: kind.name,
    path: kind.path,
    tag: kind.tag,
    params: BY_ID,
    create: {
      ...kind.docs.create,
      body: CreateBody,
      async run(ctx, s, body) {
        checkUpstreamUrl(s.upstream, body.url, 'url');
        const own = kind.columns?.(s, body, null);
        const workspaceId = await workspaceFor(ctx, s.identity, body.workspace_id);
        const organisationId = await s.identity.organisationId();
        const now = s.identity.now();
        const id = randomUUID();
        const row = {
          id,
          organisation_id: organisationId,
          workspace_id: workspaceId,
          name: body.name,
          description: body.description ?? null,
          url: body.url,
          ...authColumns(s, body.auth, id),
          ...own,
          ...learnt,
          request_timeout_ms: body.request_timeout_ms ?? null,
          status: 'active',
          created_at: now,
          updated_at: now,
          archived_at: null,
        } as Row;
        await s.servers.insert(row);
        s.identity.invalidate();
        return present(ctx, row);
      },
    },
    list: {
      summary: kind.docs.list,
      query: ListQuery,
      async run(ctx, s, q) {
        // Organisation-level keys see every workspace's unless they name one.
        const workspaceId = isOrgLevel(ctx) && q.workspace_id === undefined ? null : await workspaceFor(ctx, s.identity, q.workspace_id);
        const paged = await s.servers.page({ workspaceId, status: q.status }, pageOf(q));
        return mapPage(paged, (row) => present(ctx, row));
      },
    },
    get: { summary: kind.docs.get, run: async (ctx, s, id) => present(ctx, await visible(ctx, s, id)) },
    update: {
      summary: kind.docs.update,
      body: UpdateBody,
      // Another workspace's server is a 404 whatever the body (before the 400 of a broken one).
      find: async (ctx, s, id) => void (await visible(ctx, s, id)),
      async run(ctx, s, id, body) {
        const row = await visible(ctx, s, id);
        if (body.url !== undefined) checkUpstreamUrl(s.upstream, body.url, 'url');
        const now = s.identity.now();
        const patch = patchOf(body, ['name', 'description', 'url', 'request_timeout_ms', 'status'], now);
        if (body.auth !== undefined) Object.assign(patch, authColumns(s, body.auth, row.id));
        Object.assign(patch, kind.columns?.(s, body, row));
        // What was learnt from the server, and what callers hold on it, belong to the server as it was.
        const moved = (body.url !== undefined && body.url !== row.url) || body.auth !== undefined;
        if (moved) Object.assign(patch, learnt);
        if (body.status !== undefined && body.status !== row.status) patch.archived_at = body.status === 'archived' ? now : null;
        if (moved || (body.status === 'archived' && row.status === 'active')) await kind.retire?.(s, row);
        await s.servers.update(row.id, patch);
        s.identity.invalidate();
        return reread(ctx, s, row.id);
      },
    },
    remove: {
      summary: kind.docs.remove,
      async run(ctx, s, id) {
        const row = await visible(ctx, s, id);
        if (row.status === 'active') {
          await kind.retire?.(s, row);
          const now = s.identity.now();
          await s.servers.update(row.id, { status: 'archived', archived_at: now, updated_at: now });
          s.identity.invalidate();
        }
        return reread(ctx, s, row.id);
      },
    },
  });
}
