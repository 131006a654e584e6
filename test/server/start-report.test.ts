import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DASHBOARD_INPUTS, dashboardIsCurrent, newestMtime, UI_DIR } from '../../plugins/dashboard/build.js';
import { loadPluginsWithOrigins } from '../../server/catalog.js';
import { readEnv } from '../../server/env.js';
import { owningPackage } from '../../server/load-plugin.js';
import type { ServerConfig } from '../../server/schema.js';
import { startServer } from '../../server/server.js';
import { loadServerConfigFile } from '../../server/config.js';
import { formatStartLines, reportStart, startLogFields, type StartReport } from '../../server/start-report.js';
import { memoryLogger } from '../helpers/gateway.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';

/*
 * The start line: the address bound, the config file and what it extends, the data dir, the
 * dashboard and /docs URLs, and every plugin with where it came from; lines on a terminal, one
 * JSON log line otherwise. And the dashboard build's freshness check, which lets `npm start`
 * skip the bundle when it is current.
 */

const ROOT = resolve(import.meta.dirname, '../..');
let scratch: string;

/** A plugin module: a factory answering nothing, named `name`. */
const pluginModule = (name: string) => `export default function make() { return { name: ${JSON.stringify(name)}, apply() {} }; }\n`;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'gw-start-report-'));
  // A package whose entry sits under a folder with a nameless package.json (as dual builds ship): the named one above counts.
  const pkg = join(scratch, 'node_modules/origin-plugin');
  mkdirSync(join(pkg, 'lib'), { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'origin-plugin', version: '2.3.4', type: 'module', exports: { '.': './lib/index.js' } }));
  writeFileSync(join(pkg, 'lib/package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(pkg, 'lib/index.js'), pluginModule('origin'));
  writeFileSync(join(scratch, 'local-plugin.mjs'), pluginModule('local'));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const REPORT: StartReport = {
  listening: 'http://0.0.0.0:8787 (all interfaces; from this machine http://127.0.0.1:8787)',
  port: 8787,
  url: 'http://127.0.0.1:8787',
  configFile: '/etc/gateway/gateway.json',
  extends: 'default',
  dataDir: '/srv/gateway/data',
  dashboardUrl: 'http://127.0.0.1:8787/dashboard',
  docsUrl: 'http://127.0.0.1:8787/docs',
  plugins: [
    { name: 'trace', entry: 'trace', origin: 'bundled' },
    { name: 'health', entry: 'health', origin: 'bundled' },
    { name: 'auth-static', entry: 'auth-static', origin: 'bundled' },
    { name: 'acme', entry: 'acme-gateway-plugin', origin: 'package', package: 'acme-gateway-plugin', version: '1.0.0', file: '/etc/gateway/node_modules/acme-gateway-plugin/index.js' },
    { name: 'local', entry: './local.mjs', origin: 'path', file: '/etc/gateway/local.mjs' },
  ],
};

describe('the formatter', () => {
  test('JSON: every field, port and url as before, each plugin with its origin', () => {
    expect(startLogFields(REPORT)).toEqual({
      port: 8787,
      url: 'http://127.0.0.1:8787',
      listening: REPORT.listening,
      configFile: '/etc/gateway/gateway.json',
      extends: 'default',
      dataDir: '/srv/gateway/data',
      dashboardUrl: 'http://127.0.0.1:8787/dashboard',
      docsUrl: 'http://127.0.0.1:8787/docs',
      plugins: [
        { name: 'trace', origin: 'bundled' },
        { name: 'health', origin: 'bundled' },
        { name: 'auth-static', origin: 'bundled' },
        { name: 'acme', entry: 'acme-gateway-plugin', origin: 'package', package: 'acme-gateway-plugin', version: '1.0.0', file: '/etc/gateway/node_modules/acme-gateway-plugin/index.js' },
        { name: 'local', entry: './local.mjs', origin: 'path', file: '/etc/gateway/local.mjs' },
      ],
    });
  });

  test('terminal: the address first, then config and what it extends, data dir, pages, bundled plugins on a line, one line per external plugin', () => {
    expect(formatStartLines(REPORT)).toBe(
      [
        'gateway listening on http://0.0.0.0:8787 (all interfaces; from this machine http://127.0.0.1:8787)',
        '  config     /etc/gateway/gateway.json (extends default)',
        '  data dir   /srv/gateway/data',
        '  dashboard  http://127.0.0.1:8787/dashboard',
        '  docs       http://127.0.0.1:8787/docs',
        '  plugins    bundled: trace, health, auth-static',
        '             acme from acme-gateway-plugin 1.0.0 (package, /etc/gateway/node_modules/acme-gateway-plugin/index.js)',
        '             local (path, /etc/gateway/local.mjs)',
        '',
      ].join('\n'),
    );
  });

  test('terminal: the default config, no pages, a package named as its plugin, and bundled names wrapped at the width', () => {
    const many = Array.from({ length: 30 }, (_, i) => ({ name: `plugin-${i}`, entry: `plugin-${i}`, origin: 'bundled' as const }));
    const text = formatStartLines(
      {
        ...REPORT,
        configFile: null,
        extends: null,
        dashboardUrl: null,
        docsUrl: null,
        plugins: [...many, { name: 'acme-gateway-plugin', entry: 'acme-gateway-plugin', origin: 'package', package: 'acme-gateway-plugin', version: '1.0.0', file: '/x/index.js' }],
      },
      80,
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[1]).toBe('  config     the bundled default config');
    expect(text).not.toContain('dashboard ');
    expect(text).not.toContain('docs ');
    // The address line is as long as the address; the bundled names wrap.
    const bundledLines = lines.filter((l) => /plugin-\d/.test(l));
    expect(bundledLines.length).toBeGreaterThan(1);
    expect(bundledLines.every((l) => l.length <= 80)).toBe(true);
    expect(text.match(/plugin-\d+/g)).toHaveLength(30);
    expect(lines.at(-1)).toBe('             acme-gateway-plugin 1.0.0 (package, /x/index.js)');
  });

  test('reportStart: on a TTY the lines, on anything else one JSON log line with the same facts', async () => {
    const logs = memoryLogger();
    const running = { gateway: { logger: logs.logger }, listening: REPORT.listening, port: REPORT.port, url: REPORT.url, startInfo: REPORT } as never;
    const written: string[] = [];
    await reportStart(running, { isTTY: true, columns: 0, write: (t) => written.push(t) });
    expect(written.join('')).toBe(formatStartLines(REPORT));
    expect(logs.lines()).toEqual([]);

    await reportStart(running, { isTTY: false, write: (t) => written.push(t) });
    expect(written).toHaveLength(1);
    const line = logs.lines().find((l) => l.msg === `gateway listening on ${REPORT.listening}`);
    expect(line).toMatchObject({ level: 30, ...startLogFields(REPORT) });
  });
});

describe('plugin origins', () => {
  test('bundled, a package (name and version from its package.json, passing a nameless one) and a path', async () => {
    const config: ServerConfig = { plugins: [{ name: 'health' }, { name: 'origin-plugin' }, { name: './local-plugin.mjs' }] };
    const { plugins, origins } = await loadPluginsWithOrigins(config, readEnv({ GATEWAY_DATA_DIR: scratch }), scratch);
    expect(plugins.map((p) => p.name)).toEqual(['health', 'origin', 'local']);
    expect(origins).toEqual([
      { name: 'health', entry: 'health', origin: 'bundled' },
      { name: 'origin', entry: 'origin-plugin', origin: 'package', package: 'origin-plugin', version: '2.3.4', file: join(scratch, 'node_modules/origin-plugin/lib/index.js') },
      { name: 'local', entry: './local-plugin.mjs', origin: 'path', file: join(scratch, 'local-plugin.mjs') },
    ]);
  });

  test('owningPackage: none above a file outside any package', () => {
    expect(owningPackage(join(scratch, 'local-plugin.mjs'))).toBeNull();
    expect(owningPackage(join(ROOT, 'server/server.ts'))).toMatchObject({ name: 'switchyard-gateway' });
  });

  test('the running server carries its start info: data dir, extends, page URLs from the plugin options', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-start-data-'));
    const config = {
      extends: 'default',
      plugins: [{ name: 'health' }, { name: 'openapi', options: { docsPath: false } }, { name: 'dashboard', options: { path: '/ui' } }, { name: './local-plugin.mjs' }],
    } as ServerConfig;
    const running = await startServer({ config, baseDir: scratch, env: { GATEWAY_DATA_DIR: dataDir }, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
    try {
      expect(running.startInfo).toEqual({
        configFile: null,
        extends: 'default',
        dataDir,
        dashboardUrl: `${running.url}/ui`,
        docsUrl: null,
        plugins: [
          { name: 'health', entry: 'health', origin: 'bundled' },
          { name: 'openapi', entry: 'openapi', origin: 'bundled' },
          { name: 'dashboard', entry: 'dashboard', origin: 'bundled' },
          { name: 'local', entry: './local-plugin.mjs', origin: 'path', file: join(scratch, 'local-plugin.mjs') },
        ],
      });
    } finally {
      await running.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('"extends" as the file says it (the outer file\'s, not its base\'s); nothing for a file that extends nothing or no file', async () => {
    const base = join(scratch, 'base.json');
    writeFileSync(base, JSON.stringify({ extends: 'default', plugins: [] }));
    const withExtends = join(scratch, 'extends.json');
    writeFileSync(withExtends, JSON.stringify({ extends: './base.json', plugins: [] }));
    const without = join(scratch, 'plain.json');
    writeFileSync(without, JSON.stringify({ plugins: [{ name: 'health' }] }));
    expect((await loadServerConfigFile(withExtends)).extends).toBe('./base.json');
    expect((await loadServerConfigFile(base)).extends).toBe('default');
    expect((await loadServerConfigFile(without)).extends).toBeNull();
    expect((await loadServerConfigFile(undefined)).extends).toBeNull();
  });
});

describe('the dashboard build is skipped when current', () => {
  /** A fake ui/ and build script, and a build of them in out/ naming its two assets. */
  function layout() {
    const dir = mkdtempSync(join(scratch, 'dash-'));
    mkdirSync(join(dir, 'ui/pages'), { recursive: true });
    writeFileSync(join(dir, 'ui/main.tsx'), '');
    writeFileSync(join(dir, 'ui/pages/logs.tsx'), '');
    writeFileSync(join(dir, 'build.ts'), '');
    mkdirSync(join(dir, 'out/assets'), { recursive: true });
    writeFileSync(join(dir, 'out/index.html'), '<link rel="stylesheet" href="./assets/main-A.css" />\n<script type="module" src="./assets/main-B.js"></script>\n');
    writeFileSync(join(dir, 'out/assets/main-A.css'), '');
    writeFileSync(join(dir, 'out/assets/main-B.js'), '');
    const inputs = [join(dir, 'ui'), join(dir, 'build.ts'), join(dir, 'no-such-lockfile.json')];
    const at = (path: string, seconds: number) => utimesSync(join(dir, path), seconds, seconds);
    for (const f of ['ui/main.tsx', 'ui/pages/logs.tsx', 'build.ts']) at(f, 1_000_000);
    for (const f of ['out/index.html', 'out/assets/main-A.css', 'out/assets/main-B.js']) at(f, 2_000_000);
    return { dir, inputs, at, out: join(dir, 'out') };
  }

  test('current when every output is newer than every input (a missing input is passed over)', async () => {
    const { out, inputs } = layout();
    expect(await newestMtime(inputs)).toBe(1_000_000_000);
    expect(await dashboardIsCurrent(out, inputs)).toBe(true);
  });

  test('rebuilt when a source deep in ui/, or the build script, is newer than the build', async () => {
    const deep = layout();
    deep.at('ui/pages/logs.tsx', 3_000_000);
    expect(await dashboardIsCurrent(deep.out, deep.inputs)).toBe(false);
    const script = layout();
    script.at('build.ts', 3_000_000);
    expect(await dashboardIsCurrent(script.out, script.inputs)).toBe(false);
  });

  test('rebuilt when a new source is added, or when one output is older than an input', async () => {
    const added = layout();
    writeFileSync(join(added.dir, 'ui/pages/new.tsx'), '');
    expect(await dashboardIsCurrent(added.out, added.inputs)).toBe(false);
    const oldAsset = layout();
    oldAsset.at('out/assets/main-B.js', 500_000);
    expect(await dashboardIsCurrent(oldAsset.out, oldAsset.inputs)).toBe(false);
  });

  test('rebuilt when the build is missing, incomplete or not one the script wrote', async () => {
    const noAsset = layout();
    rmSync(join(noAsset.dir, 'out/assets/main-A.css'));
    expect(await dashboardIsCurrent(noAsset.out, noAsset.inputs)).toBe(false);
    const noIndex = layout();
    rmSync(join(noIndex.dir, 'out/index.html'));
    expect(await dashboardIsCurrent(noIndex.out, noIndex.inputs)).toBe(false);
    const foreign = layout();
    writeFileSync(join(foreign.dir, 'out/index.html'), '<p>hello</p>');
    foreign.at('out/index.html', 2_000_000);
    expect(await dashboardIsCurrent(foreign.out, foreign.inputs)).toBe(false);
    expect(await dashboardIsCurrent(join(scratch, 'never-built'), noIndex.inputs)).toBe(false);
  });

  test("the script's inputs are the page's sources, the script itself and the lockfile", () => {
    expect(DASHBOARD_INPUTS).toEqual([UI_DIR, join(ROOT, 'plugins/dashboard/build.ts'), join(ROOT, 'package-lock.json')]);
  });
});

describe('the built server', () => {
  // Built to a folder of its own (as test/server/default-logging.test.ts does), so no other test's build writes the same files.
  const OUT = join(ROOT, '.test-build', `start-report-${process.pid}`);
  const KEY = 'start-report-key-1';
  let gw: GatewayProcess;
  let dataDir: string;
  let file: string;

  beforeAll(async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', OUT], { cwd: ROOT, stdio: 'pipe' });
    dataDir = mkdtempSync(join(tmpdir(), 'gw-start-report-data-'));
    file = join(scratch, 'gateway.json');
    writeFileSync(
      file,
      JSON.stringify({
        host: '127.0.0.1',
        plugins: [{ name: 'health' }, { name: 'auth-static' }, { name: 'openapi' }, { name: 'dashboard' }, { name: 'origin-plugin' }, { name: './local-plugin.mjs' }],
      }),
    );
    gw = await startProcess(['--config', file], { GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: dataDir }, { built: join(OUT, 'server/main.js') });
  }, 180_000);

  afterAll(async () => {
    gw?.child.kill('SIGTERM');
    await gw?.exited;
    rmSync(OUT, { recursive: true, force: true });
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  test('its JSON start line names the address, config file, data dir, dashboard and docs URLs and each plugin with its origin', async () => {
    expect((await fetch(`http://127.0.0.1:${gw.port}/health`)).status).toBe(200);
    const line = gw
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => String(l.msg).startsWith('gateway listening on'));
    const url = `http://127.0.0.1:${gw.port}`;
    expect(line).toMatchObject({
      level: 30,
      msg: `gateway listening on ${url}`,
      port: gw.port,
      url,
      listening: url,
      configFile: file,
      extends: null,
      dataDir,
      dashboardUrl: `${url}/dashboard`,
      docsUrl: `${url}/docs`,
      plugins: [
        { name: 'health', origin: 'bundled' },
        { name: 'auth-static', origin: 'bundled' },
        { name: 'openapi', origin: 'bundled' },
        { name: 'dashboard', origin: 'bundled' },
        { name: 'origin', entry: 'origin-plugin', origin: 'package', package: 'origin-plugin', version: '2.3.4', file: join(scratch, 'node_modules/origin-plugin/lib/index.js') },
        { name: 'local', entry: './local-plugin.mjs', origin: 'path', file: join(scratch, 'local-plugin.mjs') },
      ],
    });
    // The docs URL it names answers (the dashboard's build is not in this test's output folder).
    expect((await fetch(`${url}/docs`)).status).toBe(200);
  });
});
