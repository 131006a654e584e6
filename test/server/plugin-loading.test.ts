import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServer } from '../../server/server.js';
import type { ServerConfig } from '../../server/schema.js';
import { memoryLogger } from '../helpers/gateway.js';

/*
 * Plugins a server config names by path or by package name, in process
 * (the built server loading a real package is test/examples/acme-plugin.test.ts).
 * The modules are plain ES modules written to a scratch folder.
 */

let dir: string;

/** A module exporting a plugin that answers GET /v1/whoami with its name and options. */
const pluginModule = (name: string) => `
export function make(options = {}) {
  return {
    name: ${JSON.stringify(name)},
    apply(api) {
      api.routes.add({ name: 'whoami', method: 'GET', path: '/v1/whoami', kind: 'handler', auth: false,
        handler: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ plugin: ${JSON.stringify(name)}, options }), observers: null }) });
    },
  };
}
export default make;
`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-load-'));
  writeFileSync(join(dir, 'local-plugin.mjs'), pluginModule('local'));
  mkdirSync(join(dir, 'node_modules/beside-plugin'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/beside-plugin/package.json'), JSON.stringify({ name: 'beside-plugin', type: 'module', exports: { '.': './main.js' } }));
  writeFileSync(join(dir, 'node_modules/beside-plugin/main.js'), pluginModule('beside'));
  writeFileSync(join(dir, 'broken.mjs'), 'export default function (', 'utf8');
  writeFileSync(join(dir, 'throws.mjs'), "export default function () { throw new Error('Invalid options for thrower: level: must be at least 1'); }\n");
  writeFileSync(join(dir, 'not-a-plugin.mjs'), 'export default { hello: 1 };\nexport const other = 1;\n');
  writeFileSync(join(dir, 'future.mjs'), "export default () => ({ name: 'future', gatewayApi: '^3.0.0', apply() {} });\n");
  mkdirSync(join(dir, 'a-folder'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the server with these plugin entries (plus health), resolving relative names from the scratch folder. */
async function start(plugins: ServerConfig['plugins']) {
  const running = await startServer({ config: { plugins: [{ name: 'health' }, ...plugins] }, baseDir: dir, env: { GATEWAY_DATA_DIR: dir }, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
  return running;
}

test('by path relative to the config folder, and by a package installed beside it; options and a named export reach the factory', async () => {
  const local = await start([{ name: './local-plugin.mjs', export: 'make', options: { level: 2 } }]);
  expect(await (await fetch(`${local.url}/v1/whoami`)).json()).toEqual({ plugin: 'local', options: { level: 2 } });
  await local.close();
  const beside = await start([{ name: 'beside-plugin' }]);
  expect(await (await fetch(`${beside.url}/v1/whoami`)).json()).toEqual({ plugin: 'beside', options: {} });
  await beside.close();
});

test.each([
  ['an unknown package', [{ name: 'no-such-plugin-anywhere' }], 'Plugin "no-such-plugin-anywhere" (plugins[1] of the server config) could not be found: it is not a bundled plugin, and no package'],
  ['a missing file', [{ name: './nope.mjs' }], 'Plugin "./nope.mjs" (plugins[1] of the server config) could not be found: there is no file {dir}/nope.mjs'],
  ['a Node built-in', [{ name: 'crypto' }], 'Plugin "crypto" (plugins[1] of the server config) could not be found: "crypto" is a Node built-in, not an installed package'],
  ['a file: URL of another host', [{ name: 'file://remote-host/x.mjs' }], 'could not be found: "file://remote-host/x.mjs" is not an absolute file: URL of this machine'],
  ['a folder', [{ name: './a-folder' }], 'could not be found: {dir}/a-folder is a directory; name the module file (e.g. ./a-folder/index.js) or the package name'],
  ['a module that does not parse', [{ name: './broken.mjs' }], 'Plugin "./broken.mjs" (plugins[1] of the server config) could not be loaded from '],
  ['a factory refusing its options', [{ name: './throws.mjs', options: { level: 0 } }], 'Plugin "./throws.mjs" (plugins[1] of the server config) refused its options: Invalid options for thrower: level: must be at least 1'],
  ['an export that is not a plugin', [{ name: './not-a-plugin.mjs' }], 'export "default" is neither a plugin'],
  ['an export that does not exist', [{ name: './local-plugin.mjs', export: 'missing' }], 'has no export "missing" (it exports make; pick one with "export")'],
  ['"export" on a bundled plugin', [{ name: 'trace', export: 'x' }], 'Plugin "trace" (plugins[1] of the server config) is bundled'],
  ['a plugin needing another plugin API', [{ name: './future.mjs' }], 'plugin "future" needs gateway plugin API ^3.0.0, but this gateway provides 2.0.0'],
])('%s stops the start with a message naming it', async (_what, plugins, message) => {
  const error = await start(plugins as ServerConfig['plugins']).then(
    async (running) => {
      await running.close();
      return null;
    },
    (err: Error) => err,
  );
  expect(error).not.toBeNull();
  expect(error!.message).toContain(message.replace('{dir}', dir));
});
