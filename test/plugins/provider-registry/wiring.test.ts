import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { createGateway } from '../../../core/index.js';
import { BOOTSTRAP_KEY, memoryLogger, startTestServer } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI } from '../../mocks/openai-upstream.js';

/*
 * How the registry sits beside the control plane: its integrations and slugs
 * live in the control plane's store, and their admin routes are served only
 * when the control plane serves its own.
 */

const ADMIN = 'admin-wiring-key-0123456789';

async function start(routes: boolean, withProxy: boolean) {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-pr-wiring-'));
  const gw = await serveGateway({
    plugins: [sqliteStore({ dataDir }), controlPlane({ bootstrapKey: ADMIN, dataDir, routes, announce: () => undefined }), providerRegistry({ dataDir }), openai(), ...(withProxy ? [proxy()] : [])],
  });
  await gw.gateway.ready;
  return gw;
}

const get = (url: string, path: string) => fetch(`${url}/v1${path}`, { headers: { 'x-gateway-api-key': ADMIN } });

test('with the admin API off, the integration, provider and model routes answer as if absent', async () => {
  const gw = await start(false, false);
  try {
    for (const path of ['/integrations', '/providers', '/models', '/workspaces']) {
      const res = await get(gw.url, path);
      expect(res.status, path).toBe(404);
      expect((await res.json()).error.message).toBe(`Unknown route GET /v1${path}.`);
    }
  } finally {
    await gw.close();
  }
});

test('with the admin API on, they are served', async () => {
  const gw = await start(true, true);
  try {
    for (const path of ['/integrations', '/providers', '/models']) expect((await get(gw.url, path)).status, path).toBe(200);
  } finally {
    await gw.close();
  }
});

test('listed before the control plane, whose store keeps the slugs, the boot stops naming the order', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-pr-order-'));
  expect(() =>
    createGateway({ plugins: [sqliteStore({ dataDir }), providerRegistry({ dataDir }), controlPlane({ bootstrapKey: ADMIN, dataDir, announce: () => undefined })], logger: memoryLogger().logger }),
  ).toThrow(/list it after the control-plane plugin/);
});

test("a server config that still gives secretsDir to control-plane (the option's place before) keeps reading secrets there", async () => {
  const mock = await startMockOpenAI();
  const secretsDir = await mkdtemp(join(tmpdir(), 'gw-pr-secrets-'));
  await mkdir(join(secretsDir, 'workspaces', 'default'), { recursive: true });
  await writeFile(join(secretsDir, 'workspaces', 'default', 'openai'), 'sk-from-moved-dir-0123456789\n');
  const plugins = ['sqlite', 'control-plane', 'config', 'provider-headers', 'provider-registry', 'openai', 'proxy'].map((name) => (name === 'control-plane' ? { name, options: { secretsDir } } : { name }));
  const gw = await startTestServer({ config: { plugins } });
  try {
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY, ...headers }, body: JSON.stringify(body) });
    const made = await post('/integrations', {
      name: 'moved',
      ai_provider_id: 'openai',
      workspace_id: 'default',
      configurations: { custom_host: mock.baseURL },
      secret_mappings: [{ target_field: 'key', secret_reference: 'file:openai' }],
      create_default_provider: true,
      default_provider_slug: 'moved',
    });
    expect(made.status, await made.clone().text()).toBe(200);
    const chat = await post('/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-provider': '@moved' });
    expect(chat.status, await chat.clone().text()).toBe(200);
    expect(mock.requests.at(-1)!.headers.authorization).toBe('Bearer sk-from-moved-dir-0123456789');
  } finally {
    await gw.close();
    await mock.close();
  }
});
