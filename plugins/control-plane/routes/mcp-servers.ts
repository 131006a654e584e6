import * as v from 'valibot';
import { GatewayError, hasScope, type RequestContext } from '../../../sdk/index.js';
import { newId } from '../keys.js';
import { subjectOf } from '../mcp.js';
import type { McpConnectionRow, McpServerRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { checkUpstreamUrl, McpAuthSchema, presentAuth, sealAuth, TimeoutField, UrlField } from '../../../sdk/admin/index.js';
import {
  Description,
  forbidden,
  isOrgLevel,
  iso,
  json,
  listResponse,
  Name,
  notFound,
  ok,
  PAGE_QUERY,
  pageOf,
  parseBody,
  parseQuery,
  patchOf,
  workspaceFor,
  BY_ID, docsFor,
  type AdminRoute,
} from './http.js';

const doc = docsFor('MCP servers');

const STATUSES = ['active', 'archived'] as const;
const Status = v.picklist(STATUSES, 'must be "active" or "archived"');
// MCP tool names are short identifiers; any printable name up to 256 characters is accepted, so an allow-list never refuses a real tool.
const ToolName = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters'), v.regex(/^[^\s\x00-\x1f]+$/, 'must not contain spaces or control characters'));
const AllowedTools = v.pipe(
  v.array(ToolName, 'must be a list of tool names'),
  v.maxLength(1000, 'holds at most 1000 tools'),
  v.check((list) => new Set(list).size === list.length, 'names a tool twice'),
);
const Hooks = v.pipe(v.array(v.unknown(), 'must be a list of guardrails'), v.maxLength(50, 'holds at most 50 guardrails'));

const CreateBody = v.strictObject({
  name: Name,
  description: Description,
  url: UrlField,
  auth: v.optional(McpAuthSchema, { type: 'none' }),
  allowed_tools: v.nullish(AllowedTools),
  input_guardrails: v.nullish(Hooks),
  output_guardrails: v.nullish(Hooks),
  request_timeout_ms: v.nullish(TimeoutField),
  workspace_id: v.nullish(v.string()),
});
const UpdateBody = v.strictObject({
  name: v.optional(Name),
  description: Description,
  url: v.optional(UrlField),
  auth: v.optional(McpAuthSchema),
  allowed_tools: v.nullish(AllowedTools),
  input_guardrails: v.nullish(Hooks),
  output_guardrails: v.nullish(Hooks),
  request_timeout_ms: v.nullish(TimeoutField),
  status: v.optional(Status),
});
const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()), status: v.optional(Status) });
const ConnectionListQuery = v.strictObject({ ...PAGE_QUERY, user_id: v.optional(v.string()), api_key_id: v.optional(v.string()) });
const ConnectionDeleteQuery = v.strictObject({ user_id: v.optional(v.string()), api_key_id: v.optional(v.string()), connection_id: v.optional(v.string()) });

/** Where the MCP gateway serves a server: the admin route's base path plus `/mcp/{id}`. */
function endpointOf(ctx: RequestContext, id: string): string {
  const at = ctx.path.indexOf('/mcp-servers');
  return `${at === -1 ? '' : ctx.path.slice(0, at)}/mcp/${id}`;
}

export function presentServer(ctx: RequestContext, row: McpServerRow) {
  const guardrails = json<{ input_guardrails?: unknown[]; output_guardrails?: unknown[] }>(row.guardrails);
  return {
    id: row.id,
    object: 'mcp-server',
    name: row.name,
    description: row.description,
    url: row.url,
    workspace_id: row.workspace_id,
    auth: presentAuth(row),
    allowed_tools: json<string[]>(row.allowed_tools),
    input_guardrails: guardrails?.input_guardrails ?? null,
    output_guardrails: guardrails?.output_guardrails ?? null,
    request_timeout_ms: row.request_timeout_ms,
    status: row.status,
    endpoint: endpointOf(ctx, row.id),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

function presentConnection(server: McpServerRow, row: McpConnectionRow) {
  return {
    id: row.id,
    object: 'mcp-server-connection',
    mcp_server_id: row.mcp_server_id,
    workspace_id: row.workspace_id,
    user_id: row.user_id,
    api_key_id: row.user_id === null ? row.api_key_id : null,
    // Whether the user's OAuth tokens are held (null: the server does not use OAuth). The tokens never leave the store.
    authorized: server.auth_type === 'oauth' ? row.tokens !== null : null,
    token_expires_at: iso(row.token_expires_at),
    scope: row.token_scope,
    active_sessions: row.active_sessions ?? 0,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    last_used_at: iso(row.last_used_at),
  };
}

/** The server `id` as the caller may see it (any status); another workspace's is a 404. */
async function visibleServer(ctx: RequestContext, cp: ControlPlane, id: string): Promise<McpServerRow> {
  const row = await cp.repo.mcpServer(id);
  const own = ctx.auth?.workspaceId ?? null;
  if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound('MCP server', id);
  return row;
}

/**
 * The guardrails column: the lists, checked with the guardrails plugin's own
 * compiler (a bad one is the 400 a config would get, naming the field).
 */
function guardrailsColumn(cp: ControlPlane, input: readonly unknown[] | null | undefined, output: readonly unknown[] | null | undefined): string | null {
  const lists: Record<string, readonly unknown[]> = {};
  if (input != null && input.length > 0) lists.input_guardrails = input;
  if (output != null && output.length > 0) lists.output_guardrails = output;
  const fields = Object.keys(lists);
  if (fields.length === 0) return null;
  const runner = cp.guardrails;
  if (runner === undefined) {
    throw new GatewayError('invalid_request', 'Invalid request body: guardrails on tool calls need the guardrails plugin, which this gateway does not load.', { param: fields[0]! });
  }
  try {
    runner.check(lists);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const message = err.message.replace(/^Invalid config: /, '');
    const field = fields.find((f) => message.startsWith(f)) ?? fields[0]!;
    throw new GatewayError('invalid_request', `Invalid request body: ${message}`, { param: field });
  }
  return JSON.stringify(lists);
}

/** Admins and managers (and organisation-level keys) act on every user's connection; others on their own only. */
function actsOnAnyone(ctx: RequestContext): boolean {
  if (ctx.auth === null || isOrgLevel(ctx)) return true;
  return ctx.auth.role === 'admin' || ctx.auth.role === 'manager' || ctx.auth.role === 'owner';
}

/** The caller's own connection subject. */
function ownSubject(ctx: RequestContext): string | null {
  return ctx.auth === null ? null : subjectOf({ userId: ctx.auth.userId ?? null, apiKeyId: ctx.auth.keyId });
}

/**
 * The scopes of the connection routes (docs/mcp.md#connections). The route takes the scope connections are made
 * and used with, `completions.write` (every role holds it), or, for keys that administer MCP servers without
 * calling them, `mcp_servers.read` to list and `mcp_servers.update` to revoke. Whose connections a caller may act
 * on is the spec's role rule on top: admins, workspace managers and organisation-level keys act on any user's,
 * everyone else on their own only.
 */
const OWN_CONNECTION_SCOPE = 'completions.write';
const OTHERS_CONNECTION_SCOPE = { list: 'mcp_servers.read', revoke: 'mcp_servers.update' } as const;
type ConnectionAct = keyof typeof OTHERS_CONNECTION_SCOPE;

function holds(ctx: RequestContext, scope: string): boolean {
  return ctx.auth === null || hasScope(ctx.auth.scopes, scope);
}

/** Before anything is looked up: a caller holding neither connection scope may do nothing here (403 naming both). */
function requireAnyConnectionScope(ctx: RequestContext, act: ConnectionAct): void {
  const others = OTHERS_CONNECTION_SCOPE[act];
  if (holds(ctx, OWN_CONNECTION_SCOPE) || holds(ctx, others)) return;
  throw forbidden(`This API key lacks the "${OWN_CONNECTION_SCOPE}" scope (its own connections) or the "${others}" scope (every user's) needed for ${ctx.method} ${ctx.path}.`);
}

/** Whether the caller may act on the connection of `subject` (its own, or another's by the role rule); the scope was checked first. */
function checkConnectionAccess(ctx: RequestContext, subject: string, act: ConnectionAct): void {
  if (ctx.auth === null || subject === ownSubject(ctx)) return;
  if (!actsOnAnyone(ctx)) throw forbidden(`Only admins and workspace managers may ${act} another user's connection; this key may act on its own only.`);
}

/** The subject a connection query names (`user_id` or `api_key_id`), or the caller's own, once the caller may act on it. */
function namedSubject(ctx: RequestContext, q: { user_id?: string; api_key_id?: string }, act: ConnectionAct): string | null {
  if (q.user_id !== undefined && q.api_key_id !== undefined) throw new GatewayError('invalid_request', 'Give user_id or api_key_id, not both.', { param: 'api_key_id' });
  const named = q.user_id !== undefined ? `user:${q.user_id}` : q.api_key_id !== undefined ? `key:${q.api_key_id}` : null;
  const subject = named ?? ownSubject(ctx);
  if (subject !== null) checkConnectionAccess(ctx, subject, act);
  return subject;
}

export const mcpServerRoutes: AdminRoute[] = [
  {
    name: 'mcp_servers.create',
    method: 'POST',
    path: '/mcp-servers',
    scope: 'mcp_servers.create',
    doc: doc('Register an MCP server', { body: CreateBody, description: 'Its URL, how the gateway authenticates to it (none, a static header, OAuth 2.1 per user), the tools it may call and the guardrails on tool calls. Served at `/v1/mcp/{id}`.' }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, CreateBody);
      checkUpstreamUrl(cp.upstream, body.url, 'url');
      const guardrails = guardrailsColumn(cp, body.input_guardrails, body.output_guardrails);
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const org = await cp.repo.organisation();
      const now = cp.now();
      const id = newId();
      const row: McpServerRow = {
        id,
        organisation_id: org!.id,
        workspace_id: workspaceId,
        name: body.name,
        description: body.description ?? null,
        url: body.url,
        ...(sealAuth(cp.box, body.auth, `mcp-server:${id}`) as Required<ReturnType<typeof sealAuth>>),
        allowed_tools: body.allowed_tools == null ? null : JSON.stringify(body.allowed_tools),
        guardrails,
        request_timeout_ms: body.request_timeout_ms ?? null,
        status: 'active',
        created_at: now,
        updated_at: now,
        archived_at: null,
      };
      await cp.repo.insert('cp_mcp_servers', { ...row });
      cp.invalidate();
      return ok(presentServer(ctx, row));
    },
  },
  {
    name: 'mcp_servers.list',
    method: 'GET',
    path: '/mcp-servers',
    scope: 'mcp_servers.read',
    doc: doc('List MCP servers', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      // Organisation-level keys see every workspace's unless they name one.
      const workspaceId = isOrgLevel(ctx) && q.workspace_id === undefined ? null : await workspaceFor(ctx, cp, q.workspace_id);
      return listResponse(await cp.repo.mcpServers({ workspaceId, status: q.status }, pageOf(q)), (row) => presentServer(ctx, row));
    },
  },
  {
    name: 'mcp_servers.get',
    method: 'GET',
    path: '/mcp-servers/:id',
    scope: 'mcp_servers.read',
    doc: doc('Get an MCP server', { params: BY_ID }),
    async handler(ctx, cp) {
      return ok(presentServer(ctx, await visibleServer(ctx, cp, ctx.params!.id!)));
    },
  },
  {
    name: 'mcp_servers.update',
    method: 'PUT',
    path: '/mcp-servers/:id',
    scope: 'mcp_servers.update',
    doc: doc('Update an MCP server', { params: BY_ID, body: UpdateBody }),
    async handler(ctx, cp) {
      const row = await visibleServer(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, UpdateBody);
      if (body.url !== undefined) checkUpstreamUrl(cp.upstream, body.url, 'url');
      const now = cp.now();
      const patch = patchOf(body, ['name', 'description', 'url', 'request_timeout_ms', 'status'], now);
      if (body.auth !== undefined) Object.assign(patch, sealAuth(cp.box, body.auth, `mcp-server:${row.id}`));
      if (body.allowed_tools !== undefined) patch.allowed_tools = body.allowed_tools === null ? null : JSON.stringify(body.allowed_tools);
      if (body.input_guardrails !== undefined || body.output_guardrails !== undefined) {
        const current = json<{ input_guardrails?: unknown[]; output_guardrails?: unknown[] }>(row.guardrails) ?? {};
        patch.guardrails = guardrailsColumn(
          cp,
          body.input_guardrails !== undefined ? body.input_guardrails : current.input_guardrails,
          body.output_guardrails !== undefined ? body.output_guardrails : current.output_guardrails,
        );
      }
      if (body.status !== undefined && body.status !== row.status) patch.archived_at = body.status === 'archived' ? now : null;
      // Tokens were issued for the server as it was, and sessions opened on it: a new URL or auth, or archiving, ends them all.
      const moved = (body.url !== undefined && body.url !== row.url) || body.auth !== undefined;
      if (moved || (body.status === 'archived' && row.status === 'active')) await cp.mcp.revokeAll(row);
      await cp.repo.update('cp_mcp_servers', { id: row.id }, patch);
      cp.invalidate();
      return ok(presentServer(ctx, (await cp.repo.mcpServer(row.id))!));
    },
  },
  {
    name: 'mcp_servers.delete',
    method: 'DELETE',
    path: '/mcp-servers/:id',
    scope: 'mcp_servers.delete',
    doc: doc('Delete an MCP server', { params: BY_ID }),
    async handler(ctx, cp) {
      const row = await visibleServer(ctx, cp, ctx.params!.id!);
      if (row.status === 'active') {
        await cp.mcp.revokeAll(row);
        const now = cp.now();
        await cp.repo.update('cp_mcp_servers', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        cp.invalidate();
      }
      return ok(presentServer(ctx, (await cp.repo.mcpServer(row.id))!));
    },
  },
  {
    name: 'mcp_servers.connections.list',
    method: 'GET',
    path: '/mcp-servers/:id/connections',
    // completions.write or mcp_servers.read (checked below, naming both); whose connections: the role rule.
    scope: null,
    doc: doc('List the connections to an MCP server', { params: BY_ID, query: ConnectionListQuery, description: 'Each user\'s (or key\'s) OAuth connection; tokens are never shown. Scope: `completions.write` (or `mcp_servers.read`). Admins, workspace managers and organisation-level keys see every user\'s; others their own.' }),
    async handler(ctx, cp) {
      requireAnyConnectionScope(ctx, 'list');
      const q = parseQuery(ctx, ConnectionListQuery);
      const asked = q.user_id !== undefined || q.api_key_id !== undefined;
      // Without a filter: every user's for those who may see them, else the caller's own.
      const everyone = !asked && actsOnAnyone(ctx);
      const subject = everyone ? null : namedSubject(ctx, q, 'list');
      const server = await visibleServer(ctx, cp, ctx.params!.id!);
      return listResponse(await cp.repo.mcpConnections(server.id, subject, pageOf(q)), (row) => presentConnection(server, row));
    },
  },
  {
    name: 'mcp_servers.connections.delete',
    method: 'DELETE',
    path: '/mcp-servers/:id/connections',
    // completions.write or mcp_servers.update (checked below, naming both); whose connection: the role rule.
    scope: null,
    doc: doc('Revoke connections to an MCP server', { params: BY_ID, query: ConnectionDeleteQuery, description: 'The one the query names (`user_id`, `api_key_id` or `connection_id`), else the caller\'s own; its open sessions end and its tokens are forgotten. Scope: `completions.write` (or `mcp_servers.update`). Admins, workspace managers and organisation-level keys revoke any user\'s; others their own.' }),
    async handler(ctx, cp) {
      requireAnyConnectionScope(ctx, 'revoke');
      const q = parseQuery(ctx, ConnectionDeleteQuery);
      if (q.connection_id !== undefined && (q.user_id !== undefined || q.api_key_id !== undefined)) {
        throw new GatewayError('invalid_request', 'Give connection_id, user_id or api_key_id, only one.', { param: 'connection_id' });
      }
      // Whose connection is checked before the server is looked up; for one named by id, once it is read.
      const subject = q.connection_id === undefined ? namedSubject(ctx, q, 'revoke') : null;
      const server = await visibleServer(ctx, cp, ctx.params!.id!);
      let connection: McpConnectionRow | undefined;
      if (q.connection_id !== undefined) {
        connection = await cp.repo.mcpConnectionById(q.connection_id);
        if (connection === undefined || connection.mcp_server_id !== server.id) throw notFound('connection', q.connection_id, 'connection_id');
        checkConnectionAccess(ctx, connection.subject, 'revoke');
      } else {
        connection = subject === null ? undefined : await cp.repo.mcpConnection(server.id, subject);
        if (connection === undefined) {
          const who = q.user_id !== undefined ? `user "${q.user_id.slice(0, 64)}"` : q.api_key_id !== undefined ? `API key "${q.api_key_id.slice(0, 64)}"` : 'this caller';
          throw new GatewayError('not_found', `No connection of ${who} to this MCP server.`, { param: q.user_id !== undefined ? 'user_id' : q.api_key_id !== undefined ? 'api_key_id' : null });
        }
      }
      const sessions = await cp.mcp.revoke(server, connection);
      cp.invalidate();
      return ok({ ...presentConnection(server, connection), authorized: server.auth_type === 'oauth' ? false : null, active_sessions: 0, deleted: true, sessions_ended: sessions });
    },
  },
];
