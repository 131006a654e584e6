import * as v from 'valibot';
import { GatewayError, type GatewayResponse, hasScope, type RequestContext } from '../../../sdk/index.js';
import { BY_ID, docsFor, forbidden, isOrgLevel, iso, listResponse, notFound, ok, PAGE_QUERY, pageOf, parseQuery, type AdminDoc, type AdminRoute } from '../../../sdk/admin/index.js';
import type { McpConnectionRow, McpServerRow } from './repository.js';
import { subjectOf, type McpStore } from './store.js';

const doc = docsFor('MCP servers');

const ConnectionListQuery = v.strictObject({ ...PAGE_QUERY, user_id: v.optional(v.string()), api_key_id: v.optional(v.string()) });
const ConnectionDeleteQuery = v.strictObject({ user_id: v.optional(v.string()), api_key_id: v.optional(v.string()), connection_id: v.optional(v.string()) });

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

/**
 * Admins and managers (and organisation-level keys) act on every user's connection; others on their own only.
 * The role is the caller's as authenticated: a user key's owner's current role in the workspace, a token's
 * role claim, `manager` for a workspace's service key.
 */
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

/**
 * A route on a server's connections. It has no scope of its own (the core would check one): `completions.write`
 * or the act's `mcp_servers.*` scope is checked first, naming both; whose connections, by the role rule.
 */
function connectionRoute(act: ConnectionAct, doc: AdminDoc, run: (ctx: RequestContext, store: McpStore) => Promise<GatewayResponse>): AdminRoute<McpStore> {
  return {
    name: `mcp_servers.connections.${act === 'list' ? 'list' : 'delete'}`,
    method: act === 'list' ? 'GET' : 'DELETE',
    path: '/mcp-servers/:id/connections',
    scope: null,
    doc,
    async handler(ctx, store) {
      requireAnyConnectionScope(ctx, act);
      return run(ctx, store);
    },
  };
}

/** `GET` and `DELETE /mcp-servers/:id/connections`: each user's OAuth connection to a server, listed and revoked. */
export const connectionRoutes: AdminRoute<McpStore>[] = [
  connectionRoute(
    'list',
    doc('List the connections to an MCP server', { params: BY_ID, query: ConnectionListQuery, description: 'Each user\'s (or key\'s) OAuth connection; tokens are never shown. Scope: `completions.write` (or `mcp_servers.read`). Admins, workspace managers and organisation-level keys see every user\'s; others their own.' }),
    async (ctx, store) => {
      const q = parseQuery(ctx, ConnectionListQuery);
      const asked = q.user_id !== undefined || q.api_key_id !== undefined;
      // Without a filter: every user's for those who may see them, else the caller's own.
      const everyone = !asked && actsOnAnyone(ctx);
      const subject = everyone ? null : namedSubject(ctx, q, 'list');
      const server = await store.servers.visible(ctx, ctx.params!.id!);
      return listResponse(await store.repo.connections(server.id, subject, pageOf(q)), (row) => presentConnection(server, row));
    },
  ),
  connectionRoute(
    'revoke',
    doc('Revoke connections to an MCP server', { params: BY_ID, query: ConnectionDeleteQuery, description: 'The one the query names (`user_id`, `api_key_id` or `connection_id`), else the caller\'s own; its open sessions end and its tokens are forgotten. Scope: `completions.write` (or `mcp_servers.update`). Admins, workspace managers and organisation-level keys revoke any user\'s; others their own.' }),
    async (ctx, store) => {
      const q = parseQuery(ctx, ConnectionDeleteQuery);
      if (q.connection_id !== undefined && (q.user_id !== undefined || q.api_key_id !== undefined)) {
        throw new GatewayError('invalid_request', 'Give connection_id, user_id or api_key_id, only one.', { param: 'connection_id' });
      }
      // Whose connection is checked before the server is looked up; for one named by id, once it is read.
      const subject = q.connection_id === undefined ? namedSubject(ctx, q, 'revoke') : null;
      const server = await store.servers.visible(ctx, ctx.params!.id!);
      let connection: McpConnectionRow | undefined;
      if (q.connection_id !== undefined) {
        connection = await store.repo.connectionById(q.connection_id);
        if (connection === undefined || connection.mcp_server_id !== server.id) throw notFound('connection', q.connection_id, 'connection_id');
        checkConnectionAccess(ctx, connection.subject, 'revoke');
      } else {
        connection = subject === null ? undefined : await store.repo.connection(server.id, subject);
        if (connection === undefined) {
          const who = q.user_id !== undefined ? `user "${q.user_id.slice(0, 64)}"` : q.api_key_id !== undefined ? `API key "${q.api_key_id.slice(0, 64)}"` : 'this caller';
          throw new GatewayError('not_found', `No connection of ${who} to this MCP server.`, { param: q.user_id !== undefined ? 'user_id' : q.api_key_id !== undefined ? 'api_key_id' : null });
        }
      }
      const sessions = await store.revoke(server, connection);
      store.identity.invalidate();
      return ok({ ...presentConnection(server, connection), authorized: server.auth_type === 'oauth' ? false : null, active_sessions: 0, deleted: true, sessions_ended: sessions });
    },
  ),
];
