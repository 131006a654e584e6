import * as v from 'valibot';
import { jsonResponse } from '../../../sdk/index.js';
import { AgentAuthSchema, BY_ID, docsFor, iso, notFound, parseQuery, upstreamServerRoutes, type AdminRoute } from '../../../sdk/admin/index.js';
import type { AgentServerRow } from './repository.js';
import type { AgentStore } from './store.js';

const doc = docsFor('Agent servers');

const CardQuery = v.strictObject({ refresh: v.optional(v.picklist(['true', 'false'], 'must be true or false')) });

/**
 * The admin routes of agents (`/v1/agent-servers`), served by the `a2a`
 * plugin beside the control plane's, and of the cards they publish.
 */
export const agentServerRoutes: AdminRoute<AgentStore>[] = [
  ...upstreamServerRoutes<AgentServerRow, AgentStore, Record<string, never>>({
    name: 'agent_servers',
    path: '/agent-servers',
    tag: 'Agent servers',
    object: 'agent-server',
    serves: 'a2a',
    auth: AgentAuthSchema,
    aad: 'agent-server',
    // Agents take none or a static header: no OAuth client.
    oauth: false,
    fields: {},
    // The cached card belongs to the agent as it was.
    learnt: ['agent_card', 'agent_card_fetched_at'],
    present: (row) => ({ agent_card_fetched_at: iso(row.agent_card_fetched_at) }),
    docs: {
      create: { summary: 'Register an A2A agent', description: 'Its agent card is fetched and validated; it is served at `/v1/a2a/{id}`.' },
      list: 'List agents',
      get: 'Get an agent',
      update: 'Update an agent',
      remove: 'Delete an agent',
    },
  }),
  {
    name: 'agent_servers.agent_card',
    method: 'GET',
    path: '/agent-servers/:id/agent-card',
    scope: 'agent_servers.read',
    doc: doc('Get an agent\'s card', { params: BY_ID, query: CardQuery, description: 'As the agent published it, from the cache (`refresh=true`: fetched again).' }),
    async handler(ctx, agents) {
      const q = parseQuery(ctx, CardQuery);
      const server = await agents.server(ctx, ctx.params!.id!);
      if (server === undefined) throw notFound('agent server', ctx.params!.id!);
      const entry = await agents.card(server, { refresh: q.refresh === 'true' });
      return jsonResponse(200, entry.card, { 'x-gateway-cache-status': entry.cache, 'x-gateway-agent-card-fetched-at': new Date(entry.fetchedAt).toISOString() });
    },
  },
];
