import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GatewayPlugin, SqlClient, SqlStore } from '../../../sdk/index.js';
import { a2a } from '../../../plugins/a2a/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startA2AAgent, type A2AAgent } from '../../mocks/a2a-agent.js';

const ADMIN = 'admin-bootstrap-key-a2a-tests-0001';
const AGENT_KEY = 'agent-static-secret-0001';
const START = Date.parse('2026-03-02T09:00:00Z');
const CARD_TTL = 60_000;

type Json = Record<string, any>;

/** Serves a fixed card (or status) at the well-known path, for cards the gateway must refuse. */
async function cardServer(answer: { status: number; body: unknown }): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** What an SSE answer carried: each event's JSON and when it arrived (ms after the request was sent). */
async function events(res: Response, sentAt: number): Promise<Array<{ at: number; data: Json }>> {
  const out: Array<{ at: number; data: Json }> = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data !== '') out.push({ at: Date.now() - sentAt, data: JSON.parse(data) });
    }
  }
  return out;
}

const message = (text: string, id: number | string = 1, method = 'message/send', configuration?: Json) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { message: { kind: 'message', role: 'user', messageId: `m-${id}`, parts: [{ kind: 'text', text }] }, ...(configuration === undefined ? {} : { configuration }) },
});

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`agent servers and the A2A gateway on ${name}`, () => {
    const clock = { now: START };
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof serveGateway>>;
    let agent: A2AAgent;
    let sql: SqlClient;
    const ids: Record<string, string> = {};
    const keys: Record<string, string> = {};
    const keyIds: Record<string, string> = {};

    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Json, text, headers: res.headers };
    };
    const ok = async (p: ReturnType<typeof call>) => {
      const r = await p;
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    const invoke = (id: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1/a2a/${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const logs = async (query: string, count: number): Promise<Json[]> => {
      for (let i = 0; i < 200; i++) {
        const r = await call('GET', `/logs?${query}`, ADMIN);
        if (r.status === 200 && r.body.data.length >= count) return r.body.data;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error(`fewer than ${count} log entries for ${query}`);
    };

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      agent = await startA2AAgent();
      const probe: GatewayPlugin = {
        name: 'probe',
        apply(api) {
          api.onReady(() => {
            sql = (api.stores.get('sql') as SqlStore).client();
          });
        },
      };
      gw = await serveGateway({
        plugins: [
          store(),
          controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-a2a-')), announce: () => undefined, now: () => clock.now }),
          logStore({ writer: 'inline', flushIntervalMs: 10, retentionDays: 0 }),
          logApi(),
          a2a({ agentCardTtlMs: CARD_TTL }),
          probe,
        ],
      });
      await gw.gateway.ready;
      ids.A = (await ok(call('POST', '/workspaces', ADMIN, { name: 'Agents A', slug: 'agents-a' }))).id;
      ids.B = (await ok(call('POST', '/workspaces', ADMIN, { name: 'Agents B', slug: 'agents-b' }))).id;
      const key = async (label: string, body: Json) => {
        const created = await ok(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: label, ...body }));
        keys[label] = created.key;
        keyIds[label] = created.id;
      };
      await key('A', { workspace_id: ids.A, scopes: ['agents.invoke', 'agent_servers.*'] });
      await key('noInvoke', { workspace_id: ids.A, scopes: ['agent_servers.*', 'completions.write'] });
      await key('invokeOnly', { workspace_id: ids.A, scopes: ['agents.invoke'] });
      await key('B', { workspace_id: ids.B, scopes: ['agents.invoke', 'agent_servers.*'] });
      const member = await ok(call('POST', `/workspaces/${ids.A}/members`, ADMIN, { email: 'bob@example.com', role: 'member' }));
      keys.member = (await ok(call('POST', '/api-keys', ADMIN, { type: 'workspace-user', name: 'bob', workspace_id: ids.A, user_id: member.user_id }))).key;
      ids.echo = (await ok(call('POST', '/agent-servers', keys.A!, { name: 'echo', url: agent.url, auth: { type: 'header', name: 'x-agent-key', value: AGENT_KEY } }))).id;
      ids.quick = (await ok(call('POST', '/agent-servers', keys.A!, { name: 'impatient', url: agent.url, request_timeout_ms: 1000 }))).id;
    });

    afterAll(async () => {
      if (store === null) return;
      await gw?.close();
      await agent?.close();
    });

    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (ctx) => {
        if (store === null) ctx.skip();
        await fn();
      });

    it('an agent server is created, read, listed and updated; its auth header is sealed and only shown masked; bad fields are 400s naming them', async () => {
      const a = await ok(call('GET', `/agent-servers/${ids.echo}`, keys.A!));
      expect(a).toMatchObject({ id: ids.echo, object: 'agent-server', name: 'echo', url: agent.url, workspace_id: ids.A, status: 'active', endpoint: `/v1/a2a/${ids.echo}` });
      expect(a.auth).toEqual({ type: 'header', name: 'x-agent-key', masked_value: '****0001' });
      const row = await sql.get<{ auth_secret: string }>('SELECT auth_secret FROM cp_agent_servers WHERE id = ?', [ids.echo]);
      expect(row!.auth_secret).not.toContain(AGENT_KEY);
      const list = await ok(call('GET', '/agent-servers', keys.A!));
      expect(list.data.map((d: Json) => d.id)).toEqual(expect.arrayContaining([ids.echo, ids.quick]));
      expect(JSON.stringify(list)).not.toContain(AGENT_KEY);
      expect((await ok(call('PUT', `/agent-servers/${ids.quick}`, keys.A!, { description: 'gives up after a second' }))).description).toBe('gives up after a second');
      for (const [body, param] of [
        [{ name: 'x', url: 'nope' }, 'url'],
        [{ name: 'x', url: 'http://192.168.1.20:9000' }, 'url'],
        [{ name: 'x', url: agent.url, auth: { type: 'oauth' } }, 'auth'],
        [{ name: 'x', url: agent.url, request_timeout_ms: 5 }, 'request_timeout_ms'],
        [{ name: '', url: agent.url }, 'name'],
      ] as const) {
        const r = await call('POST', '/agent-servers', keys.A!, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error.param).toMatch(new RegExp(`^${param}`));
      }
    });

    it('GET …/agent-card fetches the card from its well-known path, validates it, caches it and refreshes it', async () => {
      const before = agent.cardFetches();
      const first = await call('GET', `/agent-servers/${ids.echo}/agent-card`, keys.A!);
      expect(first.status).toBe(200);
      expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
      expect(first.headers.get('x-gateway-agent-card-fetched-at')).toBe(new Date(clock.now).toISOString());
      expect(first.body).toMatchObject({ name: 'Echo agent', description: 'Echoes what it is told', capabilities: { streaming: true }, skills: [{ id: 'echo' }] });
      expect(agent.cardFetches()).toBe(before + 1);
      // The static header is sent to the agent's card too, the gateway key never.
      const cardRequest = agent.requests.filter((r) => r.path === '/.well-known/agent-card.json').at(-1)!;
      expect(cardRequest.headers['x-agent-key']).toBe(AGENT_KEY);
      expect(cardRequest.headers['x-gateway-api-key']).toBeUndefined();
      // Cached: no new fetch while fresh.
      const second = await call('GET', `/agent-servers/${ids.echo}/agent-card`, keys.A!);
      expect(second.headers.get('x-gateway-cache-status')).toBe('HIT');
      expect(agent.cardFetches()).toBe(before + 1);
      // Kept in the store, for every instance.
      const stored = await sql.get<{ agent_card: string }>('SELECT agent_card FROM cp_agent_servers WHERE id = ?', [ids.echo]);
      expect(JSON.parse(stored!.agent_card).name).toBe('Echo agent');
      expect((await ok(call('GET', `/agent-servers/${ids.echo}`, keys.A!))).agent_card_fetched_at).toBe(new Date(clock.now).toISOString());
      // Asked for: fetched again.
      const forced = await call('GET', `/agent-servers/${ids.echo}/agent-card?refresh=true`, keys.A!);
      expect(forced.headers.get('x-gateway-cache-status')).toBe('REFRESH');
      expect(agent.cardFetches()).toBe(before + 2);
      // Stale: fetched again on the next read, with what the agent says now.
      agent.setDescription('Echoes, now better');
      expect((await call('GET', `/agent-servers/${ids.echo}/agent-card`, keys.A!)).body.description).toBe('Echoes what it is told');
      clock.now += CARD_TTL + 1;
      const refreshed = await call('GET', `/agent-servers/${ids.echo}/agent-card`, keys.A!);
      expect(refreshed.headers.get('x-gateway-cache-status')).toBe('REFRESH');
      expect(refreshed.body).toMatchObject({ description: 'Echoes, now better', version: '1.0.1' });
      expect(agent.cardFetches()).toBe(before + 3);
      const bad = await call('GET', `/agent-servers/${ids.echo}/agent-card?refresh=maybe`, keys.A!);
      expect([bad.status, bad.body.error.param]).toEqual([400, 'refresh']);
    });

    it('a card that is invalid, missing or unreachable is a 502 saying why', async () => {
      const invalid = await cardServer({ status: 200, body: { name: 'Half an agent', description: 'x', version: '1', capabilities: {}, defaultInputModes: [], defaultOutputModes: [], skills: [{ id: 's' }] } });
      const missing = await cardServer({ status: 404, body: {} });
      const noRpc = await cardServer({ status: 200, body: { name: 'REST only', description: 'x', version: '1', url: 'http://127.0.0.1:1/rest', preferredTransport: 'HTTP+JSON', capabilities: {}, defaultInputModes: [], defaultOutputModes: [], skills: [] } });
      try {
        const check = async (url: string, code: string, message: RegExp) => {
          const id = (await ok(call('POST', '/agent-servers', keys.A!, { name: 'broken', url }))).id;
          const r = await call('GET', `/agent-servers/${id}/agent-card`, keys.A!);
          expect(r.status, r.text).toBe(502);
          expect(r.body.error.code).toBe(code);
          expect(r.body.error.message).toMatch(message);
          await ok(call('DELETE', `/agent-servers/${id}`, keys.A!));
        };
        await check(invalid.url, 'agent_card_invalid', /skills\[0\]\.name/);
        await check(missing.url, 'agent_card_unavailable', /HTTP 404/);
        await check(noRpc.url, 'agent_card_invalid', /no JSON-RPC interface/);
        await check('http://127.0.0.1:9/', 'agent_card_unavailable', /could not be fetched/);
      } finally {
        await invalid.close();
        await missing.close();
        await noRpc.close();
      }
    });

    it("scopes: the agent server routes need agent_servers scopes (403 naming it); another workspace's agent is a 404", async () => {
      for (const [method, path, scope] of [
        ['POST', '/agent-servers', 'agent_servers.create'],
        ['GET', '/agent-servers', 'agent_servers.read'],
        ['GET', `/agent-servers/${ids.echo}`, 'agent_servers.read'],
        ['PUT', `/agent-servers/${ids.echo}`, 'agent_servers.update'],
        ['DELETE', `/agent-servers/${ids.echo}`, 'agent_servers.delete'],
        ['GET', `/agent-servers/${ids.echo}/agent-card`, 'agent_servers.read'],
      ] as const) {
        const r = await call(method, path, keys.invokeOnly!, method === 'POST' || method === 'PUT' ? { name: 'x', url: agent.url } : undefined);
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.body.error.message).toContain(`"${scope}"`);
      }
      for (const [method, path] of [
        ['GET', `/agent-servers/${ids.echo}`],
        ['PUT', `/agent-servers/${ids.echo}`],
        ['DELETE', `/agent-servers/${ids.echo}`],
        ['GET', `/agent-servers/${ids.echo}/agent-card`],
      ] as const) {
        const r = await call(method, path, keys.B!, method === 'PUT' ? { name: 'mine' } : undefined);
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      const other = await invoke(ids.echo!, keys.B!, message('hello'));
      expect(other.status).toBe(404);
      expect((await other.json()).error).toMatchObject({ code: -32000, data: { code: 'not_found' } });
      expect((await ok(call('GET', '/agent-servers', keys.B!))).total_count).toBe(0);
    });

    it('invoking an agent without agents.invoke is a 403 (a JSON-RPC error), for a service key and for a member', async () => {
      for (const key of [keys.noInvoke!, keys.member!]) {
        const res = await invoke(ids.echo!, key, message('hello'));
        expect(res.status).toBe(403);
        const body = await res.json();
        expect(body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { status: 403, code: 'forbidden' } } });
        expect(body.error.message).toContain('"agents.invoke"');
      }
      const card = await fetch(`${gw.url}/v1/a2a/${ids.echo}/.well-known/agent-card.json`, { headers: { 'x-gateway-api-key': keys.noInvoke! } });
      expect(card.status).toBe(403);
    });

    it('with agents.invoke, message/send reaches the agent and the call is logged: method, status, caller', async () => {
      const res = await invoke(ids.echo!, keys.invokeOnly!, message('hello', 41));
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: 41, result: { kind: 'message', role: 'agent', parts: [{ kind: 'text', text: 'echo: hello' }] } });
      const seen = agent.requests.filter((r) => r.path === '/a2a').at(-1)!;
      expect(seen.headers['x-agent-key']).toBe(AGENT_KEY);
      expect(seen.headers['x-gateway-api-key']).toBeUndefined();
      const entry = (await logs(`rpc_method=message/send&api_key=${keyIds.invokeOnly}`, 1))[0]!;
      expect(entry).toMatchObject({ route: 'a2a.post', path: `/v1/a2a/${ids.echo}`, status: 200, rpc_method: 'message/send', workspace_id: ids.A, api_key_id: keyIds.invokeOnly, error_code: null, attempt_count: 1 });
      expect(entry.latency_ms).toBeGreaterThan(0);
      // The refused calls are on record too.
      const refused = await logs(`api_key=${keyIds.noInvoke}&route=a2a.post`, 1);
      expect(refused[0]).toMatchObject({ status: 403, error_code: 'forbidden' });
    });

    it('message/stream streams as the agent streams: the first events arrive while the task still works; tasks/get and tasks/cancel follow', async () => {
      const sent = Date.now();
      const res = await invoke(ids.echo!, keys.A!, message('wait for it', 'stream-1', 'message/stream'), { accept: 'text/event-stream' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const got = await events(res, sent);
      expect(got.map((e) => e.data.result.kind)).toEqual(['task', 'status-update', 'artifact-update', 'status-update']);
      expect(got.every((e) => e.data.id === 'stream-1')).toBe(true);
      expect(got.at(-1)!.data.result).toMatchObject({ status: { state: 'completed' }, final: true });
      // Relayed as they came, not gathered: the agent works 1.5 s between its second event and its artifact.
      expect(got[2]!.at - got[1]!.at).toBeGreaterThan(1000);
      expect(got[1]!.at).toBeLessThan(1000);
      const taskId = got[0]!.data.result.id as string;
      const task = await (await invoke(ids.echo!, keys.A!, { jsonrpc: '2.0', id: 5, method: 'tasks/get', params: { id: taskId } })).json();
      expect(task.result).toMatchObject({ id: taskId, status: { state: 'completed' } });
      // The agent's own A2A error comes back as it sent it.
      const cancel = await (await invoke(ids.echo!, keys.A!, { jsonrpc: '2.0', id: 6, method: 'tasks/cancel', params: { id: taskId } })).json();
      expect(cancel.id).toBe(6);
      expect(cancel.error.code).toBe(-32002);
      const unknown = await (await invoke(ids.echo!, keys.A!, { jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { id: 'no-such-task' } })).json();
      expect(unknown.error.code).toBe(-32001);
      expect((await logs('rpc_method=message/stream', 1))[0]).toMatchObject({ stream: true, status: 200 });
    });

    it('bad messages, methods the gateway does not forward, a timeout and an unreachable agent are clean JSON-RPC errors', async () => {
      const notJson = await invoke(ids.echo!, keys.A!, '{nope');
      expect(notJson.status).toBe(400);
      expect((await notJson.json()).error.code).toBe(-32700);
      const push = await invoke(ids.echo!, keys.A!, { jsonrpc: '2.0', id: 9, method: 'tasks/pushNotificationConfig/set', params: {} });
      expect(push.status).toBe(200);
      expect((await push.json()).error).toMatchObject({ code: -32601 });
      const notification = await (await invoke(ids.echo!, keys.A!, { jsonrpc: '2.0', method: 'message/send', params: {} })).json();
      expect(notification.error.code).toBe(-32600);
      const started = Date.now();
      const slow = await (await invoke(ids.quick!, keys.A!, message('wait please', 10, 'message/send', { blocking: true }))).json();
      expect(slow).toMatchObject({ id: 10, error: { code: -32603, data: { timeout_ms: 1000 } } });
      expect(slow.error.message).toMatch(/did not answer within 1000 ms/);
      expect(Date.now() - started).toBeLessThan(1450);
      for (let i = 0; i < 100; i++) {
        const entries = await logs(`route=a2a.post&api_key=${keyIds.A}&rpc_method=message/send`, 1);
        if (entries.some((e) => e.error_code === 'a2a_upstream_timeout')) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const timedOut = (await logs(`route=a2a.post&api_key=${keyIds.A}&rpc_method=message/send`, 1)).find((e) => e.error_code === 'a2a_upstream_timeout');
      expect(timedOut).toMatchObject({ status: 200, path: `/v1/a2a/${ids.quick}` });
      const closed = (await ok(call('POST', '/agent-servers', keys.A!, { name: 'nobody home', url: 'http://127.0.0.1:9' }))).id;
      const gone = await (await invoke(closed, keys.A!, message('anyone?', 11))).json();
      expect(gone).toMatchObject({ id: 11, error: { code: -32603 } });
      expect(gone.error.message).toMatch(/could not be fetched/);
    });

    it("the gateway serves the agent's card with its own endpoint and key, and archiving an agent stops it", async () => {
      const res = await fetch(`${gw.url}/v1/a2a/${ids.echo}/.well-known/agent-card.json`, { headers: { 'x-gateway-api-key': keys.invokeOnly! } });
      expect(res.status).toBe(200);
      const card = await res.json();
      const endpoint = `${gw.url}/v1/a2a/${ids.echo}`;
      expect(card).toMatchObject({ name: 'Echo agent', url: endpoint, preferredTransport: 'JSONRPC', securitySchemes: { gateway_api_key: { type: 'apiKey', in: 'header', name: 'x-gateway-api-key' } } });
      expect(card.supportedInterfaces).toEqual([expect.objectContaining({ url: endpoint, protocolBinding: 'JSONRPC' })]);
      expect(JSON.stringify(card)).not.toContain(agent.url);
      const archived = await ok(call('DELETE', `/agent-servers/${ids.quick}`, keys.A!));
      expect(archived.status).toBe('archived');
      expect((await invoke(ids.quick!, keys.A!, message('hello'))).status).toBe(404);
      expect((await call('GET', `/agent-servers/${ids.quick}/agent-card`, keys.A!)).status).toBe(404);
      await ok(call('PUT', `/agent-servers/${ids.quick}`, keys.A!, { status: 'active' }));
      expect((await (await invoke(ids.quick!, keys.A!, message('back', 12))).json()).result.parts[0].text).toBe('echo: back');
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-a2a-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('a2a');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
