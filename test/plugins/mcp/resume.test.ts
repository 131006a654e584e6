import { mkdtemp } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';

/**
 * An upstream MCP server whose tool-call stream closes before the answer (SSE polling: a priming event with an
 * id and `retry`, then the server closes; or a connection that drops after a progress event): the gateway resumes
 * the upstream's stream itself with `Last-Event-ID`, so the client gets the result once and the tool runs once.
 */
const ADMIN = 'admin-bootstrap-key-mcp-resume-0001';
let gw: Awaited<ReturnType<typeof serveGateway>>;
let up: Awaited<ReturnType<typeof startPollingUpstream>>;
let key = '';
let serverId = '';

type Mode = 'poll' | 'drop' | 'hold' | 'no-id' | 'bad-request';

/** A Streamable HTTP MCP server by hand: one tool, `work`, whose answer comes only on a resumed stream. */
async function startPollingUpstream() {
  let mode: Mode = 'poll';
  const runs: string[] = [];
  const resumes: Array<{ lastEventId: string | undefined; session: string | undefined }> = [];
  /** The headers of each tools/call. */
  const calls: Array<Record<string, string | string[] | undefined>> = [];
  /** Answers waiting for a resumption, by the event id they follow. */
  const replay = new Map<string, string>();
  let n = 0;
  const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const json = (res: ServerResponse, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(200, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET') {
        const lastEventId = req.headers['last-event-id'] as string | undefined;
        // The client's own stream for the server's messages (no Last-Event-ID) is not a resumption.
        if (lastEventId !== undefined) resumes.push({ lastEventId, session: req.headers['mcp-session-id'] as string | undefined });
        const answer = lastEventId === undefined ? undefined : replay.get(lastEventId);
        if (answer === undefined) {
          res.writeHead(405).end();
          return;
        }
        replay.delete(lastEventId!);
        sse(res);
        res.end(`id: ${lastEventId}-next\ndata: ${answer}\n\n`);
        return;
      }
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method: string; params?: any };
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      if (message.method === 'initialize') {
        return json(res, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'polling', version: '1.0.0' } } }, { 'mcp-session-id': 'up-session-1' });
      }
      if (message.method === 'tools/list') {
        return json(res, { jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'work', description: 'Works', inputSchema: { type: 'object', properties: {} } }] } });
      }
      if (message.method === 'tools/call') {
        calls.push(req.headers);
        if (mode === 'bad-request') {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'Unknown tool: nope' } }));
          return;
        }
        runs.push(String(message.id));
        const answer = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: `done ${runs.length}` }] } });
        const eventId = `ev-${++n}`;
        sse(res);
        if (mode === 'poll') {
          replay.set(eventId, answer);
          // The priming event, then the server closes: the client is to come back after 30 ms.
          res.end(`id: ${eventId}\nretry: 30\ndata: \n\n`);
        } else if (mode === 'drop') {
          replay.set(eventId, answer);
          const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: message.params?._meta?.progressToken ?? 'p', progress: 1 } };
          res.write(`id: ${eventId}\ndata: ${JSON.stringify(progress)}\n\n`, () => res.socket?.destroy());
        } else if (mode === 'hold') {
          // A progress event, then nothing until the client's connection is gone: the answer waits for a resumption.
          replay.set(eventId, answer);
          const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: message.params?._meta?.progressToken ?? 'p', progress: 1 } };
          res.write(`id: ${eventId}\ndata: ${JSON.stringify(progress)}\n\n`);
        } else {
          res.end(': no id here\n\n');
        }
        return;
      }
      json(res, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no such method' } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    runs,
    resumes,
    calls,
    set mode(m: Mode) {
      mode = m;
    },
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

const call = async (method: string, path: string, auth: string, body?: unknown) => {
  const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'x-gateway-api-key': auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json()) as Record<string, any>;
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};

beforeAll(async () => {
  up = await startPollingUpstream();
  gw = await serveGateway({ plugins: [sqliteStore({ file: ':memory:' }), controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-mcp-resume-')), announce: () => undefined }), mcp()] });
  await gw.gateway.ready;
  const workspace = await call('POST', '/workspaces', ADMIN, { name: 'Resume', slug: 'mcp-resume' });
  key = (await call('POST', '/api-keys', ADMIN, { type: 'workspace-service', name: 'resume', workspace_id: workspace.id, scopes: ['completions.write', 'mcp_servers.*'] })).key;
  serverId = (await call('POST', '/mcp-servers', key, { name: 'polling', url: up.url, request_timeout_ms: 5000 })).id;
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

async function client(): Promise<Client> {
  const c = new Client({ name: 'resume-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp/${serverId}`), { requestInit: { headers: { 'x-gateway-api-key': key } } }));
  return c;
}

test('SSE polling: the upstream primes an event id and closes; the gateway resumes and the result comes once, the tool ran once', async () => {
  up.mode = 'poll';
  const c = await client();
  const runsBefore = up.runs.length;
  const resumesBefore = up.resumes.length;
  const result = await c.callTool({ name: 'work', arguments: {} });
  expect(result.content).toEqual([{ type: 'text', text: `done ${runsBefore + 1}` }]);
  expect(up.runs.length - runsBefore).toBe(1);
  expect(up.resumes.slice(resumesBefore)).toEqual([{ lastEventId: `ev-${runsBefore + 1}`, session: 'up-session-1' }]);
  await c.close();
});

test('a connection that drops after a progress event: resumed from that event, the result once', async () => {
  up.mode = 'drop';
  const c = await client();
  const runsBefore = up.runs.length;
  const progress: number[] = [];
  const result = await c.callTool({ name: 'work', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
  expect(result.content).toEqual([{ type: 'text', text: `done ${runsBefore + 1}` }]);
  expect(up.runs.length - runsBefore).toBe(1);
  expect(progress).toEqual([1]);
  await c.close();
});

test('a stream that ends without an event id cannot be resumed: the client gets the error, the tool is not run again', async () => {
  up.mode = 'no-id';
  const c = await client();
  const runsBefore = up.runs.length;
  const resumesBefore = up.resumes.length;
  await expect(c.callTool({ name: 'work', arguments: {} })).rejects.toThrow(/ended its stream without answering/);
  expect(up.runs.length - runsBefore).toBe(1);
  expect(up.resumes.length - resumesBefore).toBe(0);
  await c.close();
});

test("an upstream's 400 with a JSON-RPC error keeps its status; Mcp-Method and Mcp-Name go up with the body", async () => {
  up.mode = 'bad-request';
  const c = await client();
  await c.close();
  // A raw call through the gateway's session, as a 2026 client sends it (the standard headers beside the body).
  const init = await fetch(`${gw.url}/v1/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const session = init.headers.get('mcp-session-id')!;
  await init.arrayBuffer();
  const res = await fetch(`${gw.url}/v1/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-method': 'tools/call', 'mcp-name': 'nope' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nope', arguments: {} } }),
  });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Unknown tool: nope' } });
  expect(up.calls.at(-1)).toMatchObject({ 'mcp-method': 'tools/call', 'mcp-name': 'nope' });
});

test("the client's own connection drops mid-answer: it reconnects to the gateway with the id it was given, and the result comes once", async () => {
  up.mode = 'hold';
  const headers = { 'x-gateway-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const open = async () => {
    const init = await fetch(`${gw.url}/v1/mcp/${serverId}`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) });
    await init.arrayBuffer();
    return init.headers.get('mcp-session-id')!;
  };
  const session = await open();
  const runsBefore = up.runs.length;
  const resumesBefore = up.resumes.length;
  const leave = new AbortController();
  const res = await fetch(`${gw.url}/v1/mcp/${serverId}`, {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'work', arguments: {}, _meta: { progressToken: 'tok' } } }),
    signal: leave.signal,
  });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  // Read up to the progress event, then drop the connection.
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('\n\n')) seen += new TextDecoder().decode((await reader.read()).value);
  leave.abort();
  const id = /^id: (.+)$/m.exec(seen)?.[1];
  expect(id, seen).toBeDefined();
  expect(seen).toContain('"progress":1');
  // The gateway's own id: the upstream's is not in it, and it is no use to another session.
  expect(id).not.toContain(`ev-${runsBefore + 1}`);
  const other = await open();
  const stranger = await fetch(`${gw.url}/v1/mcp/${serverId}`, { headers: { 'x-gateway-api-key': key, accept: 'text/event-stream', 'mcp-session-id': other, 'last-event-id': id! } });
  await stranger.arrayBuffer();
  expect(up.resumes.length - resumesBefore).toBe(0);

  const again = await fetch(`${gw.url}/v1/mcp/${serverId}`, { headers: { 'x-gateway-api-key': key, accept: 'text/event-stream', 'mcp-session-id': session, 'last-event-id': id! } });
  expect(again.status).toBe(200);
  const text = await again.text();
  expect(text).toContain(JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: `done ${runsBefore + 1}` }] } }));
  // Resumed upstream from the event the client last saw, in the same upstream session; the tool ran once.
  expect(up.resumes.slice(resumesBefore)).toEqual([{ lastEventId: `ev-${runsBefore + 1}`, session: 'up-session-1' }]);
  expect(up.runs.length - runsBefore).toBe(1);
  // The resumed answer carries ids too, for a second reconnection.
  expect(text).toMatch(/^id: /m);
});
