import * as v from 'valibot';
import { jsonResponse, type RequestContext } from '../../../sdk/index.js';
import { newId } from '../keys.js';
import type { AgentServerRow } from '../repository.js';
import type { ControlPlane } from '../service.js';
import { AgentAuthSchema, checkUpstreamUrl, presentAuth, sealAuth, TimeoutField, UrlField } from '../../../sdk/admin/index.js';
import { Description, isOrgLevel, iso, listResponse, Name, notFound, ok, PAGE_QUERY, pageOf, parseBody, parseQuery, patchOf, workspaceFor, BY_ID, docsFor, type AdminRoute } from './http.js';

const doc = docsFor('Agent servers');

const Status = v.picklist(['active', 'archived'], 'must be "active" or "archived"');

const CreateBody = v.strictObject({
  name: Name,
  description: Description,
  url: UrlField,
  auth: v.optional(AgentAuthSchema, { type: 'none' }),
  request_timeout_ms: v.nullish(TimeoutField),
  workspace_id: v.nullish(v.string()),
});
const UpdateBody = v.strictObject({
  name: v.optional(Name),
  description: Description,
  url: v.optional(UrlField),
  auth: v.optional(AgentAuthSchema),
  request_timeout_ms: v.nullish(TimeoutField),
  status: v.optional(Status),
});
const ListQuery = v.strictObject({ ...PAGE_QUERY, workspace_id: v.optional(v.string()), status: v.optional(Status) });
const CardQuery = v.strictObject({ refresh: v.optional(v.picklist(['true', 'false'], 'must be true or false')) });

function endpointOf(ctx: RequestContext, id: string): string {
  const at = ctx.path.indexOf('/agent-servers');
  return `${at === -1 ? '' : ctx.path.slice(0, at)}/a2a/${id}`;
}

function presentAgent(ctx: RequestContext, row: AgentServerRow) {
  return {
    id: row.id,
    object: 'agent-server',
    name: row.name,
    description: row.description,
    url: row.url,
    workspace_id: row.workspace_id,
    auth: presentAuth(row),
    request_timeout_ms: row.request_timeout_ms,
    status: row.status,
    endpoint: endpointOf(ctx, row.id),
    agent_card_fetched_at: iso(row.agent_card_fetched_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    archived_at: iso(row.archived_at),
  };
}

async function visibleAgent(ctx: RequestContext, cp: ControlPlane, id: string): Promise<AgentServerRow> {
  const row = await cp.repo.agentServer(id);
  const own = ctx.auth?.workspaceId ?? null;
  if (row === undefined || (own !== null && row.workspace_id !== own)) throw notFound('agent server', id);
  return row;
}

/** The auth columns of an agent (no OAuth column: agents take none or a static header). */
function agentAuthColumns(cp: ControlPlane, auth: v.InferOutput<typeof AgentAuthSchema>, id: string) {
  const { oauth: _none, ...columns } = sealAuth(cp.box, auth, `agent-server:${id}`);
  return columns;
}

export const agentServerRoutes: AdminRoute[] = [
  {
    name: 'agent_servers.create',
    method: 'POST',
    path: '/agent-servers',
    scope: 'agent_servers.create',
    doc: doc('Register an A2A agent', { body: CreateBody, description: 'Its agent card is fetched and validated; it is served at `/v1/a2a/{id}`.' }),
    async handler(ctx, cp) {
      const body = parseBody(ctx, CreateBody);
      checkUpstreamUrl(cp.upstream, body.url, 'url');
      const workspaceId = await workspaceFor(ctx, cp, body.workspace_id);
      const org = await cp.repo.organisation();
      const now = cp.now();
      const id = newId();
      const row: AgentServerRow = {
        id,
        organisation_id: org!.id,
        workspace_id: workspaceId,
        name: body.name,
        description: body.description ?? null,
        url: body.url,
        ...agentAuthColumns(cp, body.auth, id),
        request_timeout_ms: body.request_timeout_ms ?? null,
        agent_card: null,
        agent_card_fetched_at: null,
        status: 'active',
        created_at: now,
        updated_at: now,
        archived_at: null,
      };
      await cp.repo.insert('cp_agent_servers', { ...row });
      cp.invalidate();
      return ok(presentAgent(ctx, row));
    },
  },
  {
    name: 'agent_servers.list',
    method: 'GET',
    path: '/agent-servers',
    scope: 'agent_servers.read',
    doc: doc('List agents', { query: ListQuery }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, ListQuery);
      const workspaceId = isOrgLevel(ctx) && q.workspace_id === undefined ? null : await workspaceFor(ctx, cp, q.workspace_id);
      return listResponse(await cp.repo.agentServers({ workspaceId, status: q.status }, pageOf(q)), (row) => presentAgent(ctx, row));
    },
  },
  {
    name: 'agent_servers.get',
    method: 'GET',
    path: '/agent-servers/:id',
    scope: 'agent_servers.read',
    doc: doc('Get an agent', { params: BY_ID }),
    async handler(ctx, cp) {
      return ok(presentAgent(ctx, await visibleAgent(ctx, cp, ctx.params!.id!)));
    },
  },
  {
    name: 'agent_servers.update',
    method: 'PUT',
    path: '/agent-servers/:id',
    scope: 'agent_servers.update',
    doc: doc('Update an agent', { params: BY_ID, body: UpdateBody }),
    async handler(ctx, cp) {
      const row = await visibleAgent(ctx, cp, ctx.params!.id!);
      const body = parseBody(ctx, UpdateBody);
      if (body.url !== undefined) checkUpstreamUrl(cp.upstream, body.url, 'url');
      const now = cp.now();
      const patch = patchOf(body, ['name', 'description', 'url', 'request_timeout_ms', 'status'], now);
      if (body.auth !== undefined) Object.assign(patch, agentAuthColumns(cp, body.auth, row.id));
      // The cached card belongs to the agent as it was.
      if ((body.url !== undefined && body.url !== row.url) || body.auth !== undefined) Object.assign(patch, { agent_card: null, agent_card_fetched_at: null });
      if (body.status !== undefined && body.status !== row.status) patch.archived_at = body.status === 'archived' ? now : null;
      await cp.repo.update('cp_agent_servers', { id: row.id }, patch);
      cp.invalidate();
      return ok(presentAgent(ctx, (await cp.repo.agentServer(row.id))!));
    },
  },
  {
    name: 'agent_servers.delete',
    method: 'DELETE',
    path: '/agent-servers/:id',
    scope: 'agent_servers.delete',
    doc: doc('Delete an agent', { params: BY_ID }),
    async handler(ctx, cp) {
      const row = await visibleAgent(ctx, cp, ctx.params!.id!);
      if (row.status === 'active') {
        const now = cp.now();
        await cp.repo.update('cp_agent_servers', { id: row.id }, { status: 'archived', archived_at: now, updated_at: now });
        cp.invalidate();
      }
      return ok(presentAgent(ctx, (await cp.repo.agentServer(row.id))!));
    },
  },
  {
    name: 'agent_servers.agent_card',
    method: 'GET',
    path: '/agent-servers/:id/agent-card',
    scope: 'agent_servers.read',
    doc: doc('Get an agent\'s card', { params: BY_ID, query: CardQuery, description: 'As the agent published it, from the cache (`refresh=true`: fetched again).' }),
    async handler(ctx, cp) {
      const q = parseQuery(ctx, CardQuery);
      const server = await cp.agents.server(ctx, ctx.params!.id!);
      if (server === undefined) throw notFound('agent server', ctx.params!.id!);
      const entry = await cp.agents.card(server, { refresh: q.refresh === 'true' });
      return jsonResponse(200, entry.card, { 'x-gateway-cache-status': entry.cache, 'x-gateway-agent-card-fetched-at': new Date(entry.fetchedAt).toISOString() });
    },
  },
];
