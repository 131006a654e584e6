import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMcpUpstream, type McpUpstream } from '../../mocks/mcp-server.js';
import { startModernMcpUpstream, type ModernMcpUpstream } from '../../mocks/mcp-modern-server.js';

const ADMIN = 'admin-bootstrap-key-mcp-revisions-01';
const MODERN = '2026-07-28';
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };

type Json = Record<string, any>;

/**
 * MCP's stateless revision (2026-07-28) through the gateway, both ways, with the official SDKs on both ends: the
 * v2 client pinned to 2026-07-28 against a 2026-only server (v2) and a 2025-only server (v1), and the v1 client
 * (2025-11-25 sessions) against the 2026-only server.
 */
describe('MCP 2026-07-28 through the gateway', () => {
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  let modern: ModernMcpUpstream;
  let legacy: McpUpstream;
  let key = '';
  const ids: Record<string, string> = {};
  const closers: Array<() => Promise<unknown>> = [];

  const call = async (method: string, path: string, k: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'x-gateway-api-key': k, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as Json;
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json;
  };
  const rpc = async (server: string, message: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/v1/mcp/${server}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-gateway-api-key': key, ...headers },
      body: JSON.stringify(message),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const modernClient = async (server: string, elicit?: (params: Json) => Json) => {
    const client = new ClientV2({ name: 'modern-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } });
    if (elicit !== undefined) client.setRequestHandler('elicitation/create', async (req: Json) => elicit(req.params) as never);
    await client.connect(new TransportV2(new URL(`${gw.url}/v1/mcp/${server}`), { requestInit: { headers: { 'x-gateway-api-key': key } } }));
    closers.push(() => client.close());
    return client;
  };
  const sessionClient = async (server: string, capabilities: Json = {}) => {
    const client = new Client({ name: 'session-test', version: '1.0.0' }, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${server}`), { requestInit: { headers: { 'x-gateway-api-key': key } } }));
    closers.push(() => client.close());
    return client;
  };
  const textOf = (result: Json) => (result.content as Json[]).map((c) => c.text).join('\n');
  const logs = async (query: string, count: number): Promise<Json[]> => {
    for (let i = 0; i < 200; i++) {
      const r = await call('GET', `/logs?${query}`, ADMIN);
      if (r.data.length >= count) return r.data;
      await new Promise((res) => setTimeout(res, 20));
    }
    throw new Error(`fewer than ${count} log entries for ${query}`);
  };

  beforeAll(async () => {
    modern = await startModernMcpUpstream();
    legacy = await startMcpUpstream();
    const dir = await mkdtemp(join(tmpdir(), 'gw-mcp-revisions-'));
    gw = await serveGateway({
      plugins: [
        sqliteStore({ file: join(dir, 'gateway.db') }),
        controlPlane({ bootstrapKey: ADMIN, dataDir: dir, announce: () => undefined }),
        guardrailChecks(),
        guardrails(),
        logStore({ writer: 'inline', flushIntervalMs: 10, retentionDays: 0 }),
        logApi(),
        mcp(),
      ],
    });
    await gw.gateway.ready;
    const ws = await call('POST', '/workspaces', ADMIN, { name: 'Revisions', slug: 'mcp-revisions' });
    key = (await call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'rev', workspace_id: ws.id, scopes: ['completions.write', 'mcp_servers.*'] })).key;
    const allowed = ['add', 'echo', 'whoami', 'deploy', 'progress'];
    ids.modern = (await call('POST', '/mcp-servers', key, { name: 'modern', url: modern.url, allowed_tools: allowed })).id;
    ids.legacy = (await call('POST', '/mcp-servers', key, { name: 'legacy', url: legacy.url, allowed_tools: allowed })).id;
    ids.guarded = (
      await call('POST', '/mcp-servers', key, { name: 'guarded modern', url: modern.url, output_guardrails: [{ id: 'no-email', deny: true, 'default.pii': { categories: ['email'] } }] })
    ).id;
  });

  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    await gw?.close();
    await modern?.close();
    await legacy?.close();
  });

  test('a 2.x client pinned to 2026-07-28, to a 2026-only server: discover, the allow-list, a call, stateless on the wire', async () => {
    const client = await modernClient(ids.modern!);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()?.name).toBe('modern-upstream');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'deploy', 'echo', 'whoami']);
    const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    expect(textOf(result as Json)).toBe('5');
    // What the upstream saw: no initialize and no session, the envelope and the standard headers as the client sent them.
    const seen = modern.requests.filter((r) => r.body?.method === 'tools/call' && r.body.params?.name === 'add');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers['mcp-session-id']).toBeUndefined();
    expect(seen[0]!.headers['mcp-protocol-version']).toBe(MODERN);
    expect(seen[0]!.headers['mcp-method']).toBe('tools/call');
    expect(seen[0]!.headers['mcp-name']).toBe('add');
    expect(seen[0]!.body!.params._meta['io.modelcontextprotocol/protocolVersion']).toBe(MODERN);
    expect(modern.requests.some((r) => r.body?.method === 'initialize')).toBe(false);
    const entries = await logs(`rpc_method=tools/call&tool_name=add`, 1);
    expect(entries[0]!.status).toBe(200);
  });

  test('a tool outside the allow-list is refused before the upstream; the answer to it never reaches it', async () => {
    const client = await modernClient(ids.modern!);
    await expect(client.callTool({ name: 'secret', arguments: {} })).rejects.toThrow(/not available through this gateway/);
    expect(modern.runs.secret).toBeUndefined();
  });

  test('input_required is relayed both ways: the client is asked, answers, and the tool runs once', async () => {
    const asked: Json[] = [];
    const client = await modernClient(ids.modern!, (params) => {
      asked.push(params);
      return { action: 'accept', content: { confirm: true } };
    });
    const before = modern.runs.deploy ?? 0;
    const result = await client.callTool({ name: 'deploy', arguments: { env: 'prod' } });
    expect(textOf(result as Json)).toBe('deployed to prod');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toBe('Deploy to prod?');
    expect((modern.runs.deploy ?? 0) - before).toBe(1);
    const retry = modern.requests.filter((r) => r.body?.params?.name === 'deploy').at(-1)!;
    expect(retry.body!.params.requestState).toBe('deploy:prod');
  });

  test('output guardrails judge a stateless call as any other', async () => {
    const client = await modernClient(ids.guarded!);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toThrow(/./);
    const ok = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(textOf(ok as Json)).toBe('echo: hi');
  });

  test('subscriptions/listen is relayed: the acknowledgement, then the server\'s list change', async () => {
    const client = await modernClient(ids.modern!);
    let changed = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed++;
    });
    const sub = await client.listen({ toolsListChanged: true });
    expect(sub.honoredFilter).toEqual({ toolsListChanged: true });
    for (let i = 0; i < 100 && changed === 0; i++) {
      modern.toolsChanged();
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(changed).toBeGreaterThan(0);
    await sub.close();
  });

  test('a 2.x client pinned to 2026-07-28, to a 2025-only server: the gateway keeps the session and answers discover', async () => {
    const initsBefore = legacy.requests.filter((r) => r.rpc === 'initialize').length;
    const client = await modernClient(ids.legacy!);
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()?.name).toBe('test-upstream');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'echo', 'progress', 'whoami']);
    expect(textOf((await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } })) as Json)).toBe('42');
    // A stream answer (progress notifications first) comes back whole.
    expect(textOf((await client.callTool({ name: 'progress', arguments: { steps: 3 } })) as Json)).toMatch(/done/);
    // A second client of the same key: the gateway's session with the server is reused.
    const again = await modernClient(ids.legacy!);
    expect(textOf((await again.callTool({ name: 'echo', arguments: { text: 'x' } })) as Json)).toBe('echo: x');
    const inits = legacy.requests.filter((r) => r.rpc === 'initialize');
    expect(inits.length - initsBefore).toBe(1);
    // The server saw 2025-11-25 requests in its session, without the 2026 envelope.
    const callSeen = legacy.requests.filter((r) => r.rpc === 'tools/call' && r.tool === 'add').at(-1)!;
    expect(callSeen.headers['mcp-session-id']).toBeTruthy();
    expect(callSeen.headers['mcp-protocol-version']).toBe('2025-11-25');
  });

  test('a 2025-11-25 session client to a 2026-only server: the gateway answers initialize from server/discover and sends every request with its envelope', async () => {
    const client = await sessionClient(ids.modern!);
    expect(client.getServerVersion()?.name).toBe('modern-upstream');
    expect(client.getInstructions()).toBe('a 2026-07-28 server');
    await client.ping();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('add');
    expect(textOf((await client.callTool({ name: 'add', arguments: { a: 1, b: 1 } })) as Json)).toBe('2');
    const seen = modern.requests.filter((r) => r.body?.method === 'tools/call' && r.body.params?.arguments?.a === 1).at(-1)!;
    expect(seen.body!.params._meta['io.modelcontextprotocol/protocolVersion']).toBe(MODERN);
    expect(seen.body!.params._meta['io.modelcontextprotocol/clientInfo']).toEqual({ name: 'session-test', version: '1.0.0' });
    expect(seen.headers['mcp-name']).toBe('add');
    // The capabilities declared at initialize go with every request: without elicitation, the server refuses to ask.
    await expect(client.callTool({ name: 'deploy', arguments: { env: 'staging' } })).rejects.toThrow(/-32021/);
    // With it, the server asks; a session client cannot be asked through the gateway, which says so rather than hang.
    const asking = await sessionClient(ids.modern!, { elicitation: { form: {} } });
    await expect(asking.callTool({ name: 'deploy', arguments: { env: 'staging' } })).rejects.toThrow(/input_required/);
    expect(modern.runs.deploy ?? 0).toBe(1); // only the 2026-07-28 client's confirmed call ran
  });

  test('refusals carry 2026-07-28\'s codes and statuses', async () => {
    const unsupported = await rpc(ids.modern!, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } }, { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.code).toBe(-32022);
    expect(unsupported.body.error.data).toEqual({ supported: [MODERN], requested: '2099-01-01' });
    const mismatch = await rpc(ids.modern!, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: ENVELOPE } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'prompts/list' });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error.code).toBe(-32020);
    const noName = await rpc(ids.modern!, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 }, _meta: ENVELOPE } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call' });
    expect(noName.status).toBe(400);
    expect(noName.body.error.data.mismatch.header).toBe('(missing)');
    const noEnvelope = await rpc(ids.modern!, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
    expect(noEnvelope.status).toBe(400);
    expect(noEnvelope.body.error.code).toBe(-32602);
    const removed = await rpc(ids.legacy!, { jsonrpc: '2.0', id: 5, method: 'ping', params: { _meta: ENVELOPE } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'ping' });
    expect(removed.status).toBe(404);
    expect(removed.body.error.code).toBe(-32601);
    // A session request without a session is still refused as before.
    const noSession = await rpc(ids.modern!, { jsonrpc: '2.0', id: 6, method: 'tools/list' });
    expect(noSession.status).toBe(400);
  });

  test('nothing along the way was an internal error', () => {
    const text = gw.logs.text();
    expect(text).not.toContain('unexpected error');
    expect(text).not.toContain('a log hook failed');
  });
});
