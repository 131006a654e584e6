import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { a2a } from '../../../plugins/a2a/index.js';
import { staticAuth } from '../../../plugins/auth-static/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { mcp } from '../../../plugins/mcp/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { serveGateway } from '../../helpers/serve.js';

/**
 * MCP servers and agents are kept beside the control plane's workspaces. Without the control plane the
 * two gateways still boot and answer 503, and their admin routes are not served; with its admin API off
 * (`routes: false`) theirs are off too.
 */
const KEY = 'static-key-without-control-plane-0001';
const gateways: Array<Awaited<ReturnType<typeof serveGateway>>> = [];
afterAll(async () => {
  for (const gw of gateways) await gw.close();
});

const call = async (url: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': KEY, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

test('without the control plane: /v1/mcp and /v1/a2a answer 503, the admin routes are unknown', async () => {
  const gw = await serveGateway({ plugins: [staticAuth({ keys: [KEY] }), mcp(), a2a()] });
  gateways.push(gw);
  await gw.gateway.ready;
  const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const mcpAnswer = await call(gw.url, 'POST', '/mcp/some-server', rpc);
  expect(mcpAnswer.status).toBe(503);
  expect(mcpAnswer.body.error.message).toMatch(/MCP servers need the control plane/);
  const a2aAnswer = await call(gw.url, 'POST', '/a2a/some-agent', { ...rpc, method: 'message/send' });
  expect(a2aAnswer.status).toBe(503);
  expect(a2aAnswer.body.error.message).toMatch(/Agents need the control plane/);
  for (const path of ['/mcp-servers', '/agent-servers']) {
    const r = await call(gw.url, 'GET', path);
    expect(r.status, path).toBe(404);
    expect(r.body.error.message).toBe(`Unknown route GET /v1${path}.`);
  }
});

test("with the control plane's admin API off, the MCP server and agent routes are off too", async () => {
  const gw = await serveGateway({
    plugins: [staticAuth({ keys: [KEY] }), sqliteStore({ file: ':memory:' }), controlPlane({ routes: false, dataDir: await mkdtemp(join(tmpdir(), 'gw-mcp-off-')), announce: () => undefined }), mcp(), a2a()],
  });
  gateways.push(gw);
  await gw.gateway.ready;
  for (const path of ['/mcp-servers', '/agent-servers', '/workspaces']) {
    const r = await call(gw.url, 'GET', path);
    expect(r.status, path).toBe(404);
  }
  // The gateways themselves still serve (no such server here).
  expect((await call(gw.url, 'POST', '/mcp/some-server', { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status).toBe(404);
});
