import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, beforeAll, expect, test } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayPlugin, SqlClient, SqlStore } from '../../../sdk/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';
import { startMcpUpstream, startOAuthMcpUpstream, type McpUpstream, type OAuthMcpUpstream } from '../../mocks/mcp-server.js';

const ADMIN = 'admin-bootstrap-key-mcp-tests-0001';
const STATIC = 'static-upstream-secret-token-0001';
const ALLOWED = ['add', 'crash', 'echo', 'fail', 'progress', 'slow', 'whoami'];

type Json = Record<string, any>;
interface Reply {
  status: number;
  body: Json;
  text: string;
}

/** Every MCP route and the MCP gateway on one SQL store: the official SDK client against real SDK servers. */
function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`MCP servers and the MCP gateway on ${name}`, () => {
    let store: (() => GatewayPlugin) | null = null;
    let gw: Awaited<ReturnType<typeof serveGateway>>;
    let up: McpUpstream;
    let staticUp: McpUpstream;
    let oauthUp: OAuthMcpUpstream;
    let sql: SqlClient;
    const ids: Record<string, string> = {};
    const keys: Record<string, string> = {};
    const keyIds: Record<string, string> = {};
    const clients: Client[] = [];

    const call = async (method: string, path: string, key: string, body?: unknown): Promise<Reply> => {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? {} : JSON.parse(text), text };
    };
    const ok = async (p: Promise<Reply>) => {
      const r = await p;
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    /** One JSON-RPC message posted as is. */
    const rpc = (server: string, key: string, message: unknown, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1/mcp/${server}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-gateway-api-key': key, ...headers },
        body: typeof message === 'string' ? message : JSON.stringify(message),
      });
    const connect = async (key: string, server: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> => {
      const client = new Client({ name: 'gateway-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${server}`), { requestInit: { headers: { 'x-gateway-api-key': key } } });
      await client.connect(transport);
      clients.push(client);
      return { client, transport };
    };
    const mcpError = async (p: Promise<unknown>): Promise<McpError> => {
      const err = await p.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, 'the call should have failed').toBeInstanceOf(McpError);
      return err as McpError;
    };
    const textOf = (result: Json) => (result.content as Json[]).map((c) => c.text).join('\n');
    /** The log entries of a filter, once `count` are written. */
    const logs = async (query: string, count: number): Promise<Json[]> => {
      for (let i = 0; i < 200; i++) {
        const r = await call('GET', `/logs?${query}`, ADMIN);
        if (r.status === 200 && r.body.data.length >= count) return r.body.data;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error(`fewer than ${count} log entries for ${query}`);
    };
    const server = (over: Json) => ({ name: 'tools', url: up.url, ...over });

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      up = await startMcpUpstream();
      staticUp = await startMcpUpstream({ bearer: STATIC });
      oauthUp = await startOAuthMcpUpstream();
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
          controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-mcp-')), announce: () => undefined }),
          guardrailChecks(),
          guardrails(),
          logStore({ writer: 'inline', flushIntervalMs: 10, retentionDays: 0 }),
          logApi(),
          mcp({ streamCheckIntervalMs: 1000 }),
          probe,
        ],
      });
      await gw.gateway.ready;
      ids.A = (await ok(call('POST', '/workspaces', ADMIN, { name: 'Team A', slug: 'mcp-a' }))).id;
      ids.B = (await ok(call('POST', '/workspaces', ADMIN, { name: 'Team B', slug: 'mcp-b' }))).id;
      const key = async (label: string, body: Json) => {
        const created = await ok(call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: label, ...body }));
        keys[label] = created.key;
        keyIds[label] = created.id;
      };
      await key('A', { workspace_id: ids.A, scopes: ['completions.write', 'mcp_servers.*', 'logs.read'] });
      await key('Aread', { workspace_id: ids.A, scopes: ['completions.write', 'mcp_servers.read'] });
      await key('Anone', { workspace_id: ids.A, scopes: ['logs.read'] });
      await key('B', { workspace_id: ids.B, scopes: ['completions.write', 'mcp_servers.*'] });
      for (const [who, role] of [['alice', 'member'], ['mike', 'manager']] as const) {
        const member = await ok(call('POST', `/workspaces/${ids.A}/members`, ADMIN, { email: `${who}@example.com`, role }));
        ids[who] = member.user_id;
        const created = await ok(call('POST', '/api-keys', ADMIN, { type: 'workspace-user', name: who, workspace_id: ids.A, user_id: member.user_id }));
        keys[who] = created.key;
        keyIds[who] = created.id;
      }
      ids.plain = (await ok(call('POST', '/mcp-servers', keys.A!, server({ name: 'plain', allowed_tools: ALLOWED, request_timeout_ms: 1000 })))).id;
      ids.all = (await ok(call('POST', '/mcp-servers', keys.A!, server({ name: 'all tools' })))).id;
      ids.guarded = (
        await ok(
          call(
            'POST',
            '/mcp-servers',
            keys.A!,
            server({
              name: 'guarded',
              input_guardrails: [{ id: 'no-forbidden', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }],
              output_guardrails: [{ id: 'no-email', deny: true, 'default.pii': { categories: ['email'] } }],
            }),
          ),
        )
      ).id;
      ids.static = (await ok(call('POST', '/mcp-servers', keys.A!, { name: 'static', url: staticUp.url, auth: { type: 'header', value: `Bearer ${STATIC}` } }))).id;
      ids.oauth = (await ok(call('POST', '/mcp-servers', keys.A!, { name: 'oauth', url: oauthUp.url, auth: { type: 'oauth' } }))).id;
    });

    afterAll(async () => {
      if (store === null) return;
      for (const c of clients) await c.close().catch(() => undefined);
      await gw?.close();
      await up?.close();
      await staticUp?.close();
      await oauthUp?.close();
    });

    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (ctx) => {
        if (store === null) ctx.skip();
        await fn();
      });

    it('an MCP server is created, read, listed and updated; its static auth header is sealed at rest and only ever shown masked', async () => {
      const s = await ok(call('GET', `/mcp-servers/${ids.static}`, keys.A!));
      expect(s).toMatchObject({
        id: ids.static,
        object: 'mcp-server',
        name: 'static',
        url: staticUp.url,
        workspace_id: ids.A,
        auth: { type: 'header', name: 'authorization', masked_value: '****0001' },
        allowed_tools: null,
        status: 'active',
        endpoint: `/v1/mcp/${ids.static}`,
      });
      const plain = await ok(call('GET', `/mcp-servers/${ids.plain}`, keys.A!));
      expect(plain).toMatchObject({ allowed_tools: ALLOWED, request_timeout_ms: 1000, auth: { type: 'none' } });
      const row = await sql.get<{ auth_secret: string }>('SELECT auth_secret FROM cp_mcp_servers WHERE id = ?', [ids.static]);
      expect(row!.auth_secret).toMatch(/^v1:/);
      expect(row!.auth_secret).not.toContain(STATIC);
      const list = await ok(call('GET', '/mcp-servers', keys.A!));
      expect(list.object).toBe('list');
      expect(list.data.map((d: Json) => d.id)).toEqual(expect.arrayContaining([ids.plain, ids.all, ids.guarded, ids.static, ids.oauth]));
      expect(JSON.stringify(list)).not.toContain(STATIC);
      const paged = await ok(call('GET', '/mcp-servers?page_size=2&current_page=1', keys.A!));
      expect(paged.data).toHaveLength(2);
      expect(paged.total_count).toBe(list.total_count);
      expect((await ok(call('GET', '/mcp-servers', keys.B!))).total_count).toBe(0);
      const renamed = await ok(call('PUT', `/mcp-servers/${ids.all}`, keys.A!, { name: 'every tool', description: 'no allow-list' }));
      expect(renamed).toMatchObject({ name: 'every tool', description: 'no allow-list', url: up.url });
    });

    it('validation: each bad field is a 400 naming it', async () => {
      const bad = async (body: Json, param: string | RegExp, message: RegExp) => {
        const r = await call('POST', '/mcp-servers', keys.A!, body);
        expect(r.status, r.text).toBe(400);
        if (typeof param === 'string') expect(r.body.error.param).toBe(param);
        else expect(r.body.error.param).toMatch(param);
        expect(r.body.error.message).toMatch(message);
      };
      await bad(server({ url: 'not a url' }), 'url', /absolute http or https URL/);
      await bad(server({ url: 'ftp://127.0.0.1/mcp' }), 'url', /http or https/);
      await bad(server({ url: 'http://user:pw@127.0.0.1/mcp' }), 'url', /user info/);
      const refused = await call('POST', '/mcp-servers', keys.A!, server({ url: 'http://10.1.2.3/mcp' }));
      expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([400, 'host_not_allowed', 'url']);
      await bad(server({ auth: { type: 'basic' } }), /^auth/, /none", "header" or "oauth/);
      await bad(server({ auth: { type: 'header', name: 'content-type', value: 'x' } }), 'auth.name', /gateway sets itself/);
      await bad(server({ auth: { type: 'header', value: 'a\r\nb' } }), 'auth.value', /line breaks/);
      await bad(server({ allowed_tools: ['echo', 'echo'] }), 'allowed_tools', /twice/);
      await bad(server({ input_guardrails: [{ id: 'g', deny: true, 'default.nope': {} }] }), 'input_guardrails', /unknown check "default.nope"/);
      await bad(server({ output_guardrails: [{ id: 'g', 'default.pii': { categories: ['colour'] } }] }), 'output_guardrails', /output_guardrails\[0\]/);
      await bad(server({ request_timeout_ms: 10 }), 'request_timeout_ms', /at least 1000/);
      await bad(server({ colour: 'red' }), 'colour', /.+/);
      await bad({ url: up.url }, 'name', /.+/);
      const q = await call('GET', '/mcp-servers?status=gone', keys.A!);
      expect([q.status, q.body.error.param]).toEqual([400, 'status']);
    });

    it('scopes: each admin route needs its mcp_servers scope (403 naming it); the MCP endpoint needs completions.write', async () => {
      const create = await call('POST', '/mcp-servers', keys.Aread!, server({}));
      expect(create.status).toBe(403);
      expect(create.body.error.message).toContain('"mcp_servers.create"');
      for (const [method, path, scope] of [
        ['GET', '/mcp-servers', 'mcp_servers.read'],
        ['GET', `/mcp-servers/${ids.plain}`, 'mcp_servers.read'],
        ['PUT', `/mcp-servers/${ids.plain}`, 'mcp_servers.update'],
        ['DELETE', `/mcp-servers/${ids.plain}`, 'mcp_servers.delete'],
      ] as const) {
        const r = await call(method, path, keys.Anone!, method === 'PUT' ? { name: 'x' } : undefined);
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.body.error.message).toContain(`"${scope}"`);
      }
      // The MCP endpoint answers in JSON-RPC, with the HTTP status of the refusal.
      const res = await rpc(ids.plain!, keys.Anone!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
      expect(res.status).toBe(403);
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, data: { status: 403, code: 'forbidden', param: 'x-gateway-api-key' } } });
      expect(body.error.message).toContain('"completions.write"');
      const unknownKey = await rpc(ids.plain!, 'no-such-key-at-all-000', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
      expect(unknownKey.status).toBe(401);
      expect((await unknownKey.json()).error.data.code).toBe('unauthorized');
    });

    it("another workspace's MCP server is a 404 on every route, the MCP endpoint and its connections included", async () => {
      for (const [method, path, body] of [
        ['GET', `/mcp-servers/${ids.plain}`],
        ['PUT', `/mcp-servers/${ids.plain}`, { name: 'mine now' }],
        ['DELETE', `/mcp-servers/${ids.plain}`],
        ['GET', `/mcp-servers/${ids.plain}/connections`],
        ['DELETE', `/mcp-servers/${ids.plain}/connections`],
      ] as const) {
        const r = await call(method, path, keys.B!, body);
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.error.code).toBe('not_found');
      }
      const res = await rpc(ids.plain!, keys.B!, { jsonrpc: '2.0', id: 7, method: 'initialize', params: {} });
      expect(res.status).toBe(404);
      expect((await res.json()).error).toMatchObject({ code: -32000, data: { code: 'not_found' } });
      // Still there for its own workspace.
      expect((await call('GET', `/mcp-servers/${ids.plain}`, keys.A!)).status).toBe(200);
    });

    it('the MCP SDK client lists and calls tools of a real SDK server through the gateway; a tool outside the allow-list is neither listed nor callable', async () => {
      const { client } = await connect(keys.A!, ids.plain!);
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name).sort()).toEqual(ALLOWED);
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hello' } }))).toBe('echo: hello');
      expect(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
      const refused = await mcpError(client.callTool({ name: 'secret', arguments: {} }));
      expect(refused.code).toBe(-32602);
      expect(refused.message).toContain('"secret" is not available');
      expect(up.requests.some((r) => r.tool === 'secret')).toBe(false);
      // Without an allow-list every tool is listed.
      const { client: open } = await connect(keys.A!, ids.all!);
      expect((await open.listTools()).tools.map((t) => t.name)).toContain('secret');
      // Resources and prompts are forwarded.
      expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(['memo://hello']);
      expect((await client.readResource({ uri: 'memo://hello' })).contents[0]).toMatchObject({ text: 'hello from a resource' });
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['greet']);
      expect((await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })).messages[0]!.content).toMatchObject({ text: 'Greet Ada' });
      // The gateway's key never reaches the MCP server; the gateway's session id is its own.
      expect(up.requests.length).toBeGreaterThan(5);
      for (const r of up.requests) expect(r.headers['x-gateway-api-key']).toBeUndefined();
      const upstreamSessions = new Set(up.requests.map((r) => r.headers['mcp-session-id']).filter(Boolean));
      const ours = await rpc(ids.plain!, keys.A!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      const sid = ours.headers.get('mcp-session-id')!;
      await ours.text();
      expect(sid).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(upstreamSessions.has(sid)).toBe(false);
    });

    it('a tool call the upstream fails, answers with HTTP 500, or does not answer in time ends in a clean MCP error', async () => {
      const { client } = await connect(keys.A!, ids.plain!);
      const failed = await client.callTool({ name: 'fail', arguments: {} });
      expect(failed.isError).toBe(true);
      expect(textOf(failed)).toContain('the tool broke');
      const crashed = await mcpError(client.callTool({ name: 'crash', arguments: {} }));
      expect(crashed.code).toBe(-32603);
      expect(crashed.message).toContain('answered HTTP 500');
      const started = Date.now();
      const slow = await mcpError(client.callTool({ name: 'slow', arguments: { ms: 8000 } }));
      expect(slow.code).toBe(-32001);
      expect(slow.message).toMatch(/did not answer within 1000 ms/);
      expect(Date.now() - started).toBeLessThan(5000);
      // The upstream was told: its tool saw the cancellation.
      for (let i = 0; i < 100 && up.cancelled.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(up.cancelled.length).toBeGreaterThan(0);
      // The session goes on.
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'after' } }))).toBe('echo: after');
      // An upstream that cannot be reached at all is a clean error too.
      const gone = await startMcpUpstream();
      const unreachable = (await ok(call('POST', '/mcp-servers', keys.A!, { name: 'gone', url: gone.url }))).id;
      const { client: doomed } = await connect(keys.A!, unreachable);
      await gone.close();
      const err = await mcpError(doomed.callTool({ name: 'echo', arguments: { text: 'x' } }));
      expect(err.code).toBe(-32603);
      expect(err.message).toMatch(/could not be reached/);
    });

    it('progress notifications reach the client as the tool sends them (the event stream is relayed event by event)', async () => {
      const { client } = await connect(keys.A!, ids.plain!);
      const seen: number[] = [];
      const result = await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, { onprogress: (p) => void seen.push(p.progress) });
      expect(seen).toEqual([1, 2, 3]);
      expect(textOf(result)).toBe('3 steps done');
    });

    it('input and output guardrails run on tool calls: a denial is a clean MCP error carrying the hook results, the tool is never called', async () => {
      const { client } = await connect(keys.A!, ids.guarded!);
      const before = up.requests.filter((r) => r.tool === 'echo').length;
      const denied = await mcpError(client.callTool({ name: 'echo', arguments: { text: 'a forbidden word' } }));
      expect(denied.code).toBe(-32000);
      expect(denied.message).toContain('Denied by hook "no-forbidden"');
      expect(denied.data).toMatchObject({ status: 446, code: 'guardrail_denied', hook_results: { before_request_hooks: [{ id: 'no-forbidden', verdict: false }] } });
      expect(up.requests.filter((r) => r.tool === 'echo').length).toBe(before);
      const leaked = await mcpError(client.callTool({ name: 'whoami', arguments: {} }));
      expect(leaked.code).toBe(-32000);
      expect(leaked.message).toContain('Denied by hook "no-email"');
      expect(leaked.message).not.toContain('alice@example.com');
      expect(leaked.data).toMatchObject({ hook_results: { after_request_hooks: [{ id: 'no-email', verdict: false }] } });
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'a fine word' } }))).toBe('echo: a fine word');
    });

    it('every call is logged like any other request: method, tool, status, latency, caller; failures with their code', async () => {
      const echo = await logs(`tool_name=echo&rpc_method=tools/call&api_key=${keyIds.A}`, 3);
      for (const e of echo) {
        expect(e).toMatchObject({ route: 'mcp.post', method: 'POST', rpc_method: 'tools/call', tool_name: 'echo', workspace_id: ids.A, api_key_id: keyIds.A });
        expect(e.latency_ms).toBeGreaterThan(0);
        // One upstream call each, except the calls a guardrail refused before any.
        expect(e.attempt_count).toBe(e.error_code === 'guardrail_denied' ? 0 : 1);
      }
      expect(echo.some((e) => e.status === 200 && e.error_code === null)).toBe(true);
      const codeOf = async (tool: string) => (await logs(`tool_name=${tool}`, 1)).map((e) => e.error_code);
      expect(await codeOf('secret')).toContain('mcp_tool_not_allowed');
      expect(await codeOf('slow')).toContain('mcp_upstream_timeout');
      expect(await codeOf('crash')).toContain('mcp_upstream_error');
      expect(await codeOf('fail')).toContain('mcp_tool_error');
      const denial = (await logs('tool_name=whoami', 1))[0]!;
      expect(denial.error_code).toBe('guardrail_denied');
      const full = await ok(call('GET', `/logs/${denial.id}`, ADMIN));
      expect(full.hook_results.after_request_hooks[0]).toMatchObject({ id: 'no-email', verdict: false });
      // The request body (the tool's arguments) is kept, like any request's.
      const list = (await logs('rpc_method=tools/list', 1))[0]!;
      expect(list.status).toBe(200);
    });

    it('sessions: one is required, an unknown one or another key\'s is a 404, and the client ending it ends the upstream session', async () => {
      const list = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} };
      const none = await rpc(ids.plain!, keys.A!, list);
      expect(none.status).toBe(400);
      expect((await none.json()).error).toMatchObject({ code: -32000, data: { code: 'mcp_session_required' } });
      expect((await rpc(ids.plain!, keys.A!, list, { 'mcp-session-id': 'made-up' })).status).toBe(404);
      const { transport } = await connect(keys.A!, ids.plain!);
      const sid = transport.sessionId!;
      const theirs = await rpc(ids.plain!, ADMIN, list, { 'mcp-session-id': sid });
      expect(theirs.status).toBe(404);
      expect((await theirs.json()).error.data.code).toBe('mcp_session_not_found');
      const mine = await rpc(ids.plain!, keys.A!, list, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' });
      expect(mine.status).toBe(200);
      await mine.text();
      const deletedBefore = up.deleted.length;
      await transport.terminateSession();
      expect(up.deleted.length).toBe(deletedBefore + 1);
      expect((await rpc(ids.plain!, keys.A!, list, { 'mcp-session-id': sid })).status).toBe(404);
      // Bad messages are JSON-RPC errors.
      const notJson = await rpc(ids.plain!, keys.A!, '{nope');
      expect(notJson.status).toBe(400);
      expect((await notJson.json()).error.code).toBe(-32700);
      const batch = await rpc(ids.plain!, keys.A!, [list]);
      expect(batch.status).toBe(400);
      expect((await batch.json()).error.code).toBe(-32600);
    });

    it("a session's GET stream answers its headers at once, before the server sends anything on it", async () => {
      const init = await rpc(ids.plain!, keys.A!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      const sid = init.headers.get('mcp-session-id')!;
      await init.text();
      // The SDK server writes nothing on this stream until it has a message of its own (none here, for many seconds):
      // the headers must come on their own, not with a first event. No answer within 2 s fails the fetch (AbortError).
      const stream = await fetch(`${gw.url}/v1/mcp/${ids.plain}`, {
        headers: { 'x-gateway-api-key': keys.A!, accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
        signal: AbortSignal.timeout(2000),
      });
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      // Nothing has been sent on it yet: the headers did not wait for an event.
      const reader = stream.body!.getReader();
      const first = await Promise.race([reader.read().then((r) => (r.done ? 'ended' : 'data')), new Promise((r) => setTimeout(() => r('quiet'), 300))]);
      expect(first).toBe('quiet');
      await reader.cancel().catch(() => undefined);
      const end = await fetch(`${gw.url}/v1/mcp/${ids.plain}`, { method: 'DELETE', headers: { 'x-gateway-api-key': keys.A!, 'mcp-session-id': sid } });
      expect(end.status).toBe(200);
      await end.text();
    });

    it('a static auth header is sent to the upstream; the gateway key never is', async () => {
      const { client } = await connect(keys.A!, ids.static!);
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'with a header' } }))).toBe('echo: with a header');
      expect(staticUp.requests.length).toBeGreaterThan(2);
      for (const r of staticUp.requests) {
        expect(r.headers.authorization).toBe(`Bearer ${STATIC}`);
        expect(r.headers['x-gateway-api-key']).toBeUndefined();
      }
    });

    it("connections: made on a user's first session, listed and revoked with the role rules and their scopes; revoking ends the user's sessions", async () => {
      const alice = await connect(keys.alice!, ids.plain!);
      const mike = await connect(keys.mike!, ids.plain!);
      const path = `/mcp-servers/${ids.plain}/connections`;
      // Her own: a member's key, with completions.write and no mcp_servers scope.
      const own = await ok(call('GET', path, keys.alice!));
      expect(own.data).toHaveLength(1);
      expect(own.data[0]).toMatchObject({ object: 'mcp-server-connection', mcp_server_id: ids.plain, user_id: ids.alice, api_key_id: null, authorized: null });
      expect(own.data[0].active_sessions).toBeGreaterThanOrEqual(1);
      // Every user's: a manager-level key holding mcp_servers.read (A: a workspace-service key, which acts as a manager).
      const all = await ok(call('GET', path, keys.A!));
      const users = all.data.map((c: Json) => c.user_id);
      expect(users).toEqual(expect.arrayContaining([ids.alice, ids.mike]));
      // The service key's own connection is listed by key, not user.
      expect(all.data.some((c: Json) => c.api_key_id === keyIds.A)).toBe(true);
      expect((await ok(call('GET', path, keys.Aread!))).total_count).toBe(all.total_count);
      expect((await ok(call('GET', path, ADMIN))).total_count).toBe(all.total_count);
      expect((await ok(call('GET', `${path}?user_id=${ids.alice}`, keys.Aread!))).data).toHaveLength(1);
      // A workspace manager acting as themself (a user key of the manager role, with completions.write and no mcp_servers
      // scope): the spec's role rule lets them see every user's connection, and name another user's.
      expect((await ok(call('GET', path, keys.mike!))).data.map((c: Json) => c.user_id)).toEqual(expect.arrayContaining([ids.alice, ids.mike]));
      expect((await ok(call('GET', `${path}?user_id=${ids.mike}`, keys.mike!))).data).toHaveLength(1);
      expect((await ok(call('GET', `${path}?user_id=${ids.alice}`, keys.mike!))).data.map((c: Json) => c.user_id)).toEqual([ids.alice]);
      // A key with neither scope (logs.read only, though it acts as a manager) may do nothing here: a 403 naming them, before any lookup.
      for (const [method, target, scope] of [
        ['GET', path, 'mcp_servers.read'],
        ['GET', `${path}?user_id=${ids.alice}`, 'mcp_servers.read'],
        ['DELETE', path, 'mcp_servers.update'],
        ['DELETE', `${path}?user_id=${ids.alice}`, 'mcp_servers.update'],
        ['DELETE', `${path}?connection_id=${own.data[0].id}`, 'mcp_servers.update'],
        ['GET', `/mcp-servers/no-such-server/connections`, 'mcp_servers.read'],
      ] as const) {
        const r = await call(method, target, keys.Anone!);
        expect(r.status, `${method} ${target}`).toBe(403);
        expect(r.body.error).toMatchObject({ code: 'forbidden', param: 'x-gateway-api-key' });
        expect(r.body.error.message).toContain('"completions.write"');
        expect(r.body.error.message).toContain(`"${scope}"`);
      }
      expect((await ok(call('GET', path, keys.A!))).data.map((c: Json) => c.user_id)).toEqual(expect.arrayContaining([ids.alice, ids.mike]));
      // A member acts on their own connection only.
      const peek = await call('GET', `${path}?user_id=${ids.mike}`, keys.alice!);
      expect(peek.status).toBe(403);
      const revokeOther = await call('DELETE', `${path}?user_id=${ids.mike}`, keys.alice!);
      expect(revokeOther.status).toBe(403);
      expect(revokeOther.body.error.message).toMatch(/Only admins and workspace managers/);
      // A stream of hers, open when she is revoked, ends.
      // (A second session of hers: the SDK client holds the one stream its own session may have.)
      const init = await rpc(ids.plain!, keys.alice!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      const second = init.headers.get('mcp-session-id')!;
      await init.text();
      const stream = await fetch(`${gw.url}/v1/mcp/${ids.plain}`, { headers: { 'x-gateway-api-key': keys.alice!, accept: 'text/event-stream', 'mcp-session-id': second } });
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const ended = (async () => {
        const reader = stream.body!.getReader();
        while (!(await reader.read()).done);
        return true;
      })();
      const deletedBefore = up.deleted.length;
      const revoked = await ok(call('DELETE', path, keys.alice!));
      expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r(false), 3000))])).toBe(true);
      expect(revoked).toMatchObject({ user_id: ids.alice, deleted: true });
      expect(revoked.sessions_ended).toBeGreaterThanOrEqual(1);
      // Her session ended: at the gateway at once, upstream in the background.
      await expect(alice.client.callTool({ name: 'echo', arguments: { text: 'still here?' } })).rejects.toThrow();
      for (let i = 0; i < 100 && up.deleted.length === deletedBefore; i++) await new Promise((r) => setTimeout(r, 20));
      expect(up.deleted.length).toBeGreaterThan(deletedBefore);
      expect((await ok(call('GET', path, keys.alice!))).data).toHaveLength(0);
      // Mike's session is untouched.
      expect(textOf(await mike.client.callTool({ name: 'echo', arguments: { text: 'mike' } }))).toBe('echo: mike');
      expect((await call('DELETE', `${path}?user_id=${ids.alice}`, keys.A!)).status).toBe(404);
      await connect(keys.alice!, ids.plain!);
      // (A key with neither completions.write nor mcp_servers.update was refused above, naming both.)
      const hers = (await ok(call('GET', `${path}?user_id=${ids.alice}`, keys.A!))).data[0];
      // A workspace manager acting as themself revokes another user's connection (the spec's role rule).
      expect((await ok(call('DELETE', `${path}?connection_id=${hers.id}`, keys.mike!))).deleted).toBe(true);
      expect((await ok(call('GET', `${path}?user_id=${ids.alice}`, keys.A!))).data).toHaveLength(0);
      // A workspace-service key acts as a manager: it revokes another key's connection by key id (Aread's, not its own).
      const readerSession = await connect(keys.Aread!, ids.plain!);
      expect((await ok(call('GET', `${path}?api_key_id=${keyIds.Aread}`, keys.A!))).data).toHaveLength(1);
      const byKey = await ok(call('DELETE', `${path}?api_key_id=${keyIds.Aread}`, keys.A!));
      expect(byKey).toMatchObject({ api_key_id: keyIds.Aread, user_id: null, deleted: true });
      expect(byKey.sessions_ended).toBeGreaterThanOrEqual(1);
      expect((await ok(call('GET', `${path}?api_key_id=${keyIds.Aread}`, keys.A!))).data).toHaveLength(0);
      await expect(readerSession.client.callTool({ name: 'echo', arguments: { text: 'still here?' } })).rejects.toThrow();
      // The revoking key's own connection is untouched.
      expect((await ok(call('GET', `${path}?api_key_id=${keyIds.A}`, keys.A!))).data).toHaveLength(1);
      const twice = await call('DELETE', `${path}?user_id=${ids.alice}&api_key_id=x`, keys.mike!);
      expect([twice.status, twice.body.error.param]).toEqual([400, 'api_key_id']);
    });

    it('OAuth 2.1 per user: the authorization URL comes as an MCP error, the redirect stores sealed tokens, a 401 is refreshed once, revoking forgets them', async () => {
      const refused = await mcpError(connect(keys.alice!, ids.oauth!));
      expect(refused.code).toBe(-32042);
      const elicitation = (refused.data as Json).elicitations[0];
      expect(elicitation).toMatchObject({ mode: 'url' });
      const authorize = new URL(elicitation.url);
      expect(authorize.origin).toBe(oauthUp.origin);
      expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorize.searchParams.get('redirect_uri')).toBe(`${gw.url}/v1/mcp/oauth/callback`);
      expect(authorize.searchParams.get('resource')).toBe(oauthUp.url);
      // The state is sealed: it does not show who asked, nor the PKCE verifier.
      expect(authorize.searchParams.get('state')).not.toContain(ids.alice!);
      // The gateway registered itself as a client (dynamic registration) and keeps the client.
      expect(oauthUp.issued.registrations).toBe(1);
      const s = await ok(call('GET', `/mcp-servers/${ids.oauth}`, keys.A!));
      expect(s.auth).toMatchObject({ type: 'oauth', dynamic_registration: true });
      expect(s.auth.client_id).toEqual(expect.any(String));
      // The user's browser: the authorization server approves and redirects to the gateway.
      const approved = await fetch(authorize, { redirect: 'manual' });
      expect(approved.status).toBe(302);
      const back = approved.headers.get('location')!;
      expect(back.startsWith(`${gw.url}/v1/mcp/oauth/callback?`)).toBe(true);
      const done = await fetch(back);
      expect(done.status).toBe(200);
      expect(await done.json()).toMatchObject({ status: 'authorized', mcp_server_id: ids.oauth });
      const { client } = await connect(keys.alice!, ids.oauth!);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
      // Sealed at rest, never shown.
      const row = await sql.get<{ tokens: string }>("SELECT tokens FROM cp_mcp_connections WHERE mcp_server_id = ? AND subject = ?", [ids.oauth, `user:${ids.alice}`]);
      expect(row!.tokens).toMatch(/^v1:/);
      for (const t of [...oauthUp.issued.access, ...oauthUp.issued.refresh]) expect(row!.tokens).not.toContain(t);
      const listed = await ok(call('GET', `/mcp-servers/${ids.oauth}/connections`, keys.alice!));
      expect(listed.data[0]).toMatchObject({ authorized: true, scope: 'tools' });
      for (const t of oauthUp.issued.access) expect(JSON.stringify(listed)).not.toContain(t);
      // Another user of the same server has authorized nothing yet.
      expect((await mcpError(connect(keys.mike!, ids.oauth!))).code).toBe(-32042);
      // The server stops accepting the access token: the gateway refreshes once and the call goes through.
      oauthUp.revokeAccessTokens();
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'refreshed' } }))).toBe('echo: refreshed');
      expect(oauthUp.issued.refreshGrants).toBe(1);
      // The authorization URL can also be asked for directly.
      const direct = await ok(call('POST', `/mcp/${ids.oauth}/authorize`, keys.mike!));
      expect(direct).toMatchObject({ object: 'mcp-authorization', mcp_server_id: ids.oauth, redirect_uri: `${gw.url}/v1/mcp/oauth/callback` });
      expect(new URL(direct.authorization_url).origin).toBe(oauthUp.origin);
      const notOAuth = await call('POST', `/mcp/${ids.plain}/authorize`, keys.mike!);
      expect(notOAuth.status).toBe(400);
      // A forged or tampered state is refused.
      const forged = await fetch(`${gw.url}/v1/mcp/oauth/callback?code=x&state=v1:abcdef12:AAAA:BBBB:CCCC`);
      expect(forged.status).toBe(400);
      expect((await forged.json()).error.param).toBe('state');
      // Revoking forgets the tokens and ends the session: the next connection must authorize again.
      await ok(call('DELETE', `/mcp-servers/${ids.oauth}/connections`, keys.alice!));
      expect(await sql.get('SELECT id FROM cp_mcp_connections WHERE mcp_server_id = ? AND subject = ?', [ids.oauth, `user:${ids.alice}`])).toBeUndefined();
      await expect(client.listTools()).rejects.toThrow();
      expect((await mcpError(connect(keys.alice!, ids.oauth!))).code).toBe(-32042);
    });

    it('archiving a server ends its sessions and refuses its endpoint; restoring it serves again', async () => {
      const id = (await ok(call('POST', '/mcp-servers', keys.A!, server({ name: 'to archive' })))).id;
      const { client } = await connect(keys.A!, id);
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'before' } }))).toBe('echo: before');
      const archived = await ok(call('DELETE', `/mcp-servers/${id}`, keys.A!));
      expect(archived).toMatchObject({ status: 'archived' });
      expect(archived.archived_at).toEqual(expect.any(String));
      await expect(client.callTool({ name: 'echo', arguments: { text: 'after' } })).rejects.toThrow();
      const res = await rpc(id, keys.A!, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
      expect(res.status).toBe(404);
      expect((await ok(call('GET', `/mcp-servers?status=archived`, keys.A!))).data.map((d: Json) => d.id)).toContain(id);
      expect((await ok(call('PUT', `/mcp-servers/${id}`, keys.A!, { status: 'active' }))).archived_at).toBeNull();
      const again = await connect(keys.A!, id);
      expect(textOf(await again.client.callTool({ name: 'echo', arguments: { text: 'restored' } }))).toBe('echo: restored');
    });

    it('nothing along the way was an internal error or a failed log hook', async () => {
      const text = gw.logs.text();
      expect(text).not.toContain('unexpected error');
      expect(text).not.toContain('a log hook failed');
      expect(text).not.toContain('building a log entry failed');
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-mcp-sqlite-'));
  return () => sqliteStore({ file: join(dir, 'gateway.db') });
});

const schema = uniqueSchema('mcp');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});
