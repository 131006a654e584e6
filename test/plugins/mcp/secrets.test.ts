import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { BOOTSTRAP_KEY, startTestServer } from '../../helpers/gateway.js';
import { startA2AAgent, type A2AAgent } from '../../mocks/a2a-agent.js';
import { startMcpUpstream, startOAuthMcpUpstream, type McpUpstream, type OAuthMcpUpstream } from '../../mocks/mcp-server.js';

/*
 * The secrets of MCP servers and agents (static auth headers, OAuth client
 * secrets, each user's access and refresh tokens) through the real server and
 * its default config: searched for in every answer, the log, and every file
 * of the data dir (the SQLite database with the control plane and the stored
 * log entries, its WAL), after calls that succeed and fail.
 */

const MCP_HEADER = 'SECRETmcpheadervalue0001';
const AGENT_HEADER = 'SECRETagentheadervalue0001';

let gw: Awaited<ReturnType<typeof startTestServer>>;
let dataDir: string;
let up: McpUpstream;
let oauthUp: OAuthMcpUpstream;
let agent: A2AAgent;
const answers: string[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  up = await startMcpUpstream({ bearer: MCP_HEADER });
  oauthUp = await startOAuthMcpUpstream();
  agent = await startA2AAgent();
  dataDir = await mkdtemp(join(tmpdir(), 'gw-mcp-secrets-'));
  gw = await startTestServer({ env: { GATEWAY_DATA_DIR: dataDir } });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await up.close();
  await oauthUp.close();
  await agent.close();
});

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': BOOTSTRAP_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  answers.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
  return { status: res.status, body: text === '' ? {} : JSON.parse(text) };
}

async function connect(server: string): Promise<Client> {
  const client = new Client({ name: 'secrets', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${server}`), { requestInit: { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } } }));
  clients.push(client);
  return client;
}

test('static auth headers, OAuth client secrets and tokens appear in no answer, log line or database file', async () => {
  const withHeader = (await send('POST', '/v1/mcp-servers', { name: 'header', url: up.url, auth: { type: 'header', value: `Bearer ${MCP_HEADER}` } })).body.id;
  const withOAuth = (await send('POST', '/v1/mcp-servers', { name: 'oauth', url: oauthUp.url, auth: { type: 'oauth' } })).body.id;
  const agentId = (await send('POST', '/v1/agent-servers', { name: 'agent', url: agent.url, auth: { type: 'header', name: 'x-agent-key', value: AGENT_HEADER } })).body.id;

  const client = await connect(withHeader);
  expect((await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content).toEqual([{ type: 'text', text: 'echo: hi' }]);
  await client.callTool({ name: 'crash', arguments: {} }).catch(() => undefined);

  const refused = await connect(withOAuth).then(
    () => null,
    (e: unknown) => e as McpError,
  );
  const url = (refused!.data as { elicitations: Array<{ url: string }> }).elicitations[0]!.url;
  const back = (await fetch(url, { redirect: 'manual' })).headers.get('location')!;
  answers.push(await (await fetch(back)).text());
  const authorized = await connect(withOAuth);
  await authorized.listTools();
  oauthUp.revokeAccessTokens();
  await authorized.callTool({ name: 'echo', arguments: { text: 'after a refresh' } });
  expect(oauthUp.issued.refreshGrants).toBe(1);

  expect((await send('GET', `/v1/agent-servers/${agentId}/agent-card`)).status).toBe(200);
  const sent = await send('POST', `/v1/a2a/${agentId}`, { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'hello' }] } } });
  expect(sent.body.result.parts[0].text).toBe('echo: hello');
  // Listings and reads of everything.
  for (const path of ['/v1/mcp-servers', `/v1/mcp-servers/${withHeader}`, `/v1/mcp-servers/${withOAuth}`, `/v1/mcp-servers/${withOAuth}/connections`, '/v1/agent-servers', `/v1/agent-servers/${agentId}`, '/v1/logs?limit=500']) {
    expect((await send('GET', path)).status, path).toBe(200);
  }
  await send('DELETE', `/v1/mcp-servers/${withOAuth}/connections`);

  // The clients' open streams end as the gateway starts closing: the shutdown does not wait for them.
  const closing = Date.now();
  await gw.close();
  expect(Date.now() - closing).toBeLessThan(5000);
  const files = await readdir(dataDir, { recursive: true, withFileTypes: true });
  const stored = await Promise.all(files.filter((f) => f.isFile()).map(async (f) => [join(f.parentPath, f.name), await readFile(join(f.parentPath, f.name))] as const));
  const logText = gw.logs.text();
  // The calls were stored, so the search means something.
  expect(stored.some(([, bytes]) => bytes.includes('tools/call'))).toBe(true);
  expect(stored.some(([, bytes]) => bytes.includes('message/send'))).toBe(true);
  const secrets = { MCP_HEADER, AGENT_HEADER, ...Object.fromEntries([...oauthUp.issued.access, ...oauthUp.issued.refresh, ...oauthUp.issued.clientSecrets].map((s, i) => [`oauth ${i}`, s])) };
  expect(Object.keys(secrets).length).toBeGreaterThan(5);
  const where = (secret: string): string[] => [
    ...answers.filter((a) => a.includes(secret)).map((a) => `answer: ${a.slice(0, 200)}`),
    ...(logText.includes(secret) ? ['the log'] : []),
    ...stored.filter(([, bytes]) => bytes.includes(secret)).map(([name]) => `file ${name}`),
  ];
  for (const [name, secret] of Object.entries(secrets)) expect(where(secret), name).toEqual([]);
});
