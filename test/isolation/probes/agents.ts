import { afterAll } from 'vitest';
import { startA2AAgent, type A2AAgent } from '../../mocks/a2a-agent.js';
import { startMcpUpstream, type McpUpstream } from '../../mocks/mcp-server.js';
import type { Probe } from '../probe.js';
import { perTenant, type Answer, type Tenant } from '../world.js';

/*
 * The upstreams these probes register, on loopback, started on first use and shared by every world
 * of the test file (what a world's gateway keeps of them is the world's own): one MCP server both
 * workspaces register, and an agent per tenant, each with a card of its own.
 */
let mcpUpstream: Promise<McpUpstream> | null = null;
let agentUpstreams: Promise<Record<Tenant, A2AAgent>> | null = null;
const mcpServer = () => (mcpUpstream ??= startMcpUpstream());
const agents = () =>
  (agentUpstreams ??= (async () => {
    const [a, b] = await Promise.all([startA2AAgent(), startA2AAgent()]);
    a.setDescription("A's agent");
    b.setDescription("B's agent");
    return { A: a, B: b };
  })());
afterAll(async () => {
  await Promise.all([mcpUpstream?.then((up) => up.close()), agentUpstreams?.then((up) => Promise.all([up.A.close(), up.B.close()]))]);
});

/** Each workspace's MCP server, under the same name, at the same upstream: only the gateway's session tells them apart. */
const registeredMcp = perTenant(async (world, who) => {
  const up = await mcpServer();
  return (await world.admin('POST', '/v1/mcp-servers', { workspace_id: who.workspaceId, name: 'probe tools', url: up.url, auth: { type: 'none' } })).id as string;
});

/** Each workspace's agent server, under the same name, at its tenant's agent. */
const registeredAgent = perTenant(async (world, who) => {
  const url = (await agents())[who.tenant].url;
  return (await world.admin('POST', '/v1/agent-servers', { workspace_id: who.workspaceId, name: 'probe agent', url })).id as string;
});

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** A JSON-RPC answer, whether it came as JSON or as the `data:` of an event stream. */
function rpcAnswer(r: Answer): any {
  if (r.body !== null) return r.body;
  const data = r.text.split('\n').filter((line) => line.startsWith('data:'));
  return data.length === 0 ? null : JSON.parse(data.at(-1)!.slice('data:'.length));
}

/** An A2A 0.3 `message/send`, which the gateway forwards to the JSON-RPC endpoint its cached card names. */
const hello = { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'probe-1', parts: [{ kind: 'text', text: 'hello' }] } } };

/** Which of the tenants' agents saw an A2A call while `send` ran (they are shared by the worlds, so counted around it). */
async function calledAgents(send: () => Promise<Answer>): Promise<{ answer: Answer; agents: Tenant[] }> {
  const up = await agents();
  const calls = (t: Tenant) => up[t].requests.filter((q) => q.method === 'POST' && q.path.startsWith('/a2a')).length;
  const before = { A: calls('A'), B: calls('B') };
  const answer = await send();
  return { answer, agents: (['A', 'B'] as const).filter((t) => calls(t) > before[t]) };
}

/**
 * Sessions of the MCP gateway are bound to the server (one workspace's) that opened them, and agent
 * cards to the agent server they were fetched from: a workspace whose servers have the same names
 * neither continues another's session nor gets another's card.
 */
export const AGENT_PROBES: readonly Probe[] = [
  {
    title: "A opens an MCP session on its `probe tools`: B presenting A's session id to its own `probe tools` is an unknown session",
    covers: ['mcp:sessions'],
    async dirty(world, a) {
      await registeredMcp(world, world.caller('B'));
      const server = await registeredMcp(world, a);
      const init = await world.call(a, 'POST', `/v1/mcp/${server}`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'isolation-probe', version: '1' } } }, MCP_HEADERS);
      const session = init.headers.get('mcp-session-id');
      if (init.status !== 200 || session === null) throw new Error(`mcp probe: A's initialize answered ${init.status} ${init.text}`);
      const ready = await world.call(a, 'POST', `/v1/mcp/${server}`, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...MCP_HEADERS, 'mcp-session-id': session });
      if (ready.status !== 202) throw new Error(`mcp probe: A's initialized notification answered ${ready.status} ${ready.text}`);
      return { session };
    },
    async observe(world, who, clue) {
      const server = await registeredMcp(world, who);
      const list = await world.call(who, 'POST', `/v1/mcp/${server}`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { ...MCP_HEADERS, 'mcp-session-id': clue.session! });
      const answer = rpcAnswer(list);
      // A session opened a connection (the server's and the key's): B's server has none in either world.
      const connections = await world.call(who, 'GET', `/v1/mcp-servers/${server}/connections`);
      return {
        status: list.status,
        error: answer?.error?.data?.code ?? answer?.error?.code ?? null,
        tools: (answer?.result?.tools ?? []).map((t: { name: string }) => t.name).sort(),
        connections: [connections.status, connections.body?.data?.length ?? null],
      };
    },
  },
  {
    title: "both workspaces register `probe agent`, and A reads its card and calls it: B's `probe agent` serves B's card and reaches B's agent",
    covers: ['a2a:agent-cards'],
    async dirty(world, a) {
      await registeredAgent(world, world.caller('B'));
      const server = await registeredAgent(world, a);
      // The first read fetches the card and stores it; the call reads it again, into the instance's cache.
      const card = await world.call(a, 'GET', `/v1/a2a/${server}/.well-known/agent-card.json`);
      if (card.status !== 200) throw new Error(`a2a probe: A's card answered ${card.status} ${card.text}`);
      const sent = await world.call(a, 'POST', `/v1/a2a/${server}`, hello);
      if (sent.status !== 200 || sent.body?.result === undefined) throw new Error(`a2a probe: A's call answered ${sent.status} ${sent.text}`);
      return {};
    },
    async observe(world, who) {
      const server = await registeredAgent(world, who);
      const card = await world.call(who, 'GET', `/v1/a2a/${server}/.well-known/agent-card.json`);
      // The call goes where the card (cached) says: the agent that saw it tells whose card that was.
      const { answer, agents: reached } = await calledAgents(() => world.call(who, 'POST', `/v1/a2a/${server}`, hello));
      return {
        card: [card.status, card.headers.get('x-gateway-cache-status'), card.body?.name ?? null, card.body?.description ?? null],
        call: [answer.status, answer.body?.error?.code ?? null],
        reached,
      };
    },
  },
];
