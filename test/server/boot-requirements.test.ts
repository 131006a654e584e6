import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { createGateway } from '../../core/index.js';
import { loadPlugins } from '../../server/catalog.js';
import { readEnv } from '../../server/env.js';
import { memoryLogger } from '../helpers/gateway.js';
import { LOOPBACK_ENV } from '../helpers/outbound.js';

// A server config is read, its plugins loaded and the gateway built as `npm start` does; what is missing stops the boot.
async function boot(plugins: { name: string; options?: Record<string, unknown> }[]) {
  const env = readEnv({ ...LOOPBACK_ENV });
  const loaded = await loadPlugins({ plugins } as never, env);
  return createGateway({ plugins: loaded, logger: memoryLogger().logger });
}

test('a server config with SCIM but no control plane fails to boot, naming the service and the plugin to load', async () => {
  await expect(boot([{ name: 'scim', options: { token: 'scim-token-for-a-boot-test-000000' } }])).rejects.toThrow(
    /plugin "scim" requires the service "gateway\.identity" \(provided by the control-plane plugin\)/,
  );
});

test('with the control plane (and its store) listed, the same config boots', async () => {
  const gateway = await boot([{ name: 'sqlite', options: { dataDir: mkdtempSync(join(tmpdir(), 'gw-boot-')) } }, { name: 'control-plane' }, { name: 'scim', options: { token: 'scim-token-for-a-boot-test-000000' } }]);
  await gateway.ready;
  await gateway.close();
});

test('two routes under one name fail the boot, naming both', async () => {
  const route = (path: string) => ({ name: 'acme.twice', method: 'GET' as const, path, kind: 'handler' as const, handler: async () => null });
  expect(() =>
    createGateway({
      plugins: [{ name: 'acme', apply: (api) => { api.routes.add(route('/v1/acme/a')); api.routes.add(route('/v1/acme/b')); } }],
      logger: memoryLogger().logger,
    }),
  ).toThrow(/acme\.twice/);
});
