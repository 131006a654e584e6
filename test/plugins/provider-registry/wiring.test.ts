import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { providerRegistry } from '../../../plugins/provider-registry/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { createGateway } from '../../../core/index.js';
import { memoryLogger } from '../../helpers/gateway.js';
import { serveGateway } from '../../helpers/serve.js';

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
