import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../server/config.js';
import { DEFAULT_CONFIG, defaultConfig } from '../../server/default-config.js';
import { startServer } from '../../server/server.js';
import { startChatMock, type ChatMock } from '../../server/testing/index.js';
import { memoryLogger } from '../helpers/gateway.js';
import { LOOPBACK_ENV } from '../helpers/outbound.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-extends-'));
/** Writes a config file in the scratch folder; returns its path. */
function config(name: string, value: unknown): string {
  const file = join(dir, name);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}
const names = (c: { plugins: Array<{ name: string; export?: string }> }) => c.plugins.map((p) => (p.export === undefined ? p.name : `${p.name}#${p.export}`));
const defaults = names(DEFAULT_CONFIG);

describe('"extends": "default"', () => {
  test('a new plugin is added at the end; the default\'s own stay, in their order', async () => {
    const c = await loadServerConfig(config('add.json', { extends: 'default', plugins: [{ name: './mine.js', options: { level: 2 } }] }));
    expect(names(c)).toEqual([...defaults, './mine.js']);
    expect(c.plugins.at(-1)).toEqual({ name: './mine.js', options: { level: 2 } });
    expect(c.port).toBe(DEFAULT_CONFIG.port);
    expect(c).not.toHaveProperty('extends');
  });

  test('an entry the default has replaces it where it stands, options and all (not merged)', async () => {
    const c = await loadServerConfig(config('replace.json', { extends: 'default', plugins: [{ name: 'request-log', options: { level: 'error' } }] }));
    expect(names(c)).toEqual(defaults);
    expect(c.plugins[defaults.indexOf('request-log')]).toEqual({ name: 'request-log', options: { level: 'error' } });
  });

  test('"remove": true takes a plugin out; before and after put a new one where they say', async () => {
    const c = await loadServerConfig(
      config('move.json', {
        extends: 'default',
        plugins: [{ name: 'otel', remove: true }, { name: './early.js', before: 'guardrails' }, { name: './late.js', after: 'guardrails' }],
      }),
    );
    const list = names(c);
    expect(list).not.toContain('otel');
    expect(list.indexOf('./early.js')).toBe(list.indexOf('guardrails') - 1);
    expect(list.indexOf('./late.js')).toBe(list.indexOf('guardrails') + 1);
    expect(list.length).toBe(defaults.length + 1);
  });

  test('the same package twice with different exports are two plugins', async () => {
    const c = await loadServerConfig(config('exports.json', { extends: 'default', plugins: [{ name: 'pkg' }, { name: 'pkg', export: 'checks' }, { name: 'pkg', export: 'checks', options: { x: 1 } }] }));
    expect(names(c).slice(-2)).toEqual(['pkg', 'pkg#checks']);
    expect(c.plugins.at(-1)).toEqual({ name: 'pkg', export: 'checks', options: { x: 1 } });
  });

  test('the default is the environment\'s: with REDIS_URL and DATABASE_URL, the shared stores\' variant', async () => {
    const env = { redisUrl: 'redis://127.0.0.1:6379', databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' };
    const c = await loadServerConfig(config('env.json', { extends: 'default', plugins: [{ name: './mine.js' }] }), env);
    expect(names(c)).toEqual([...names(defaultConfig(env)), './mine.js']);
    expect(names(c)).toContain('redis');
    expect(names(c)).toContain('postgres');
  });

  test('fields: the extending file wins; upstream, server and outbound merge key by key (allowHosts add up); providers, guardrails and configs entry by entry', async () => {
    const base = config('fields/base.json', {
      port: 9000,
      host: '127.0.0.1',
      upstream: { headersTimeoutMs: 1000, connections: 8 },
      outbound: { allowHosts: ['10.0.0.1'] },
      providers: { a: { provider: 'openai' }, b: { provider: 'anthropic' } },
      plugins: [{ name: 'health' }],
    });
    const c = await loadServerConfig(
      config('fields/child.json', { extends: './base.json', port: 9001, upstream: { connections: 16 }, outbound: { allowHosts: ['10.0.0.2'] }, providers: { b: { provider: 'google' } } }),
    );
    expect(c).toMatchObject({ port: 9001, host: '127.0.0.1', upstream: { headersTimeoutMs: 1000, connections: 16 }, outbound: { allowHosts: ['10.0.0.1', '10.0.0.2'] } });
    expect(c.providers).toEqual({ a: { provider: 'openai' }, b: { provider: 'google' } });
    expect(names(c)).toEqual(['health']);
    void base;
  });

  test('a chain: a file extends a file that extends the default (paths relative to each file)', async () => {
    config('chain/team/base.json', { extends: 'default', plugins: [{ name: 'otel', remove: true }] });
    const c = await loadServerConfig(config('chain/prod.json', { extends: './team/base.json', plugins: [{ name: './mine.js' }] }));
    expect(names(c)).toEqual([...defaults.filter((n) => n !== 'otel'), './mine.js']);
  });
});

describe('mistakes, each a start error naming the file', () => {
  test.each([
    ['removing a plugin the base does not have', { extends: 'default', plugins: [{ name: 'no-such', remove: true }] }, /plugins\[0\]: "no-such" is not among the extended config's plugins, so it cannot be removed \(they are: trace, /],
    ['an anchor that is not there', { extends: 'default', plugins: [{ name: './x.js', after: 'nope' }] }, /plugins\[0\]: after names "nope", which is not among the plugins/],
    ['both anchors', { extends: 'default', plugins: [{ name: './x.js', after: 'trace', before: 'health' }] }, /give before or after, not both/],
    ['remove with options', { extends: 'default', plugins: [{ name: 'otel', remove: true, options: {} }] }, /takes only its name/],
    ['a change in a config that extends nothing', { plugins: [{ name: 'health' }, { name: 'otel', remove: true }] }, /plugins\[1\]\.remove changes an extended config's plugins, but this config extends none \(add "extends": "default"\)/],
    ['extends that is not a string', { extends: 3, plugins: [] }, /extends must be "default" or the path of another config file/],
    ['a base file that is not there', { extends: './missing.json', plugins: [] }, /Cannot read the server config .*missing\.json \(extended by .*\)/],
    ['a merged config the schema refuses', { extends: 'default', port: 'eighty' }, /the server config .*: port/],
  ])('%s', async (_what, value, message) => {
    await expect(loadServerConfig(config(`bad-${Math.random().toString(36).slice(2)}.json`, value))).rejects.toThrow(message);
  });

  test('a cycle', async () => {
    config('cycle/a.json', { extends: './b.json', plugins: [] });
    config('cycle/b.json', { extends: './a.json', plugins: [] });
    await expect(loadServerConfig(join(dir, 'cycle/a.json'))).rejects.toThrow(/extends makes a cycle \(.*a\.json → .*b\.json → .*a\.json\)/);
  });
});

describe('through the real server', () => {
  let mock: ChatMock;
  const closing: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closing) await close();
    await mock?.close();
  });

  test('a check plugin and a provider plugin added at the end of the default work: the order of taps comes from their stages, not the list', async () => {
    mock = await startChatMock('The answer is 42');
    writeFileSync(
      join(dir, 'late-plugins.mjs'),
      `import { defineCheck, v, addShapedRoutes, openAIFormatResponse } from 'switchyard-gateway/sdk';
const noDigits = defineCheck({ parameters: v.strictObject({}), denyCode: 'late_digits', run: (_p, { text }) => ({ verdict: !/[0-9]/.test(text) }) });
export const checks = () => ({ name: 'late-checks', errorCodes: { late_digits: { status: 446, type: 'guardrail_error' } }, apply: (api) => api.checks.add('late.noDigits', noDigits) });
export const provider = () => ({ name: 'late-provider', apply(api) {
  addShapedRoutes(api, ['chat.completions']);
  api.providers.add('late', { name: 'late', baseURL: 'http://127.0.0.1:1/v1', authHeaders: (t) => ({ authorization: 'Bearer ' + (t.api_key ?? '') }), routes: { 'chat.completions': { path: '/chat/completions', response: openAIFormatResponse } } });
} });
`,
    );
    const file = config('late.json', { extends: 'default', plugins: [{ name: './late-plugins.mjs', export: 'checks' }, { name: './late-plugins.mjs', export: 'provider' }] });
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-extends-data-'));
    const running = await startServer({
      argv: ['--config', file],
      env: { GATEWAY_API_KEYS: 'extends-test-key-01', GATEWAY_BOOTSTRAP_KEY: 'extends-bootstrap-key-0001', GATEWAY_DATA_DIR: dataDir, ...LOOPBACK_ENV },
      port: 0,
      host: '127.0.0.1',
      logger: memoryLogger().logger,
    });
    closing.push(() => running.close());
    expect(running.startInfo.extends).toBe('default');
    const post = (guardrails: string, content = 'Hi') =>
      fetch(`${running.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': 'extends-test-key-01',
          'x-gateway-config': JSON.stringify({ provider: 'late', api_key: 'sk-late', custom_host: mock.baseURL, [guardrails]: [{ id: 'digits', deny: true, 'late.noDigits': {} }] }),
        },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
      });
    const denied = await post('input_guardrails', 'Call 555 0100');
    expect(denied.status).toBe(446);
    expect((await denied.json()).error.code).toBe('late_digits');
    const out = await post('output_guardrails');
    expect(out.status).toBe(446);
    expect(mock.requests.length).toBe(1);
    expect(mock.requests[0]!.headers.authorization).toBe('Bearer sk-late');
  });

  test('an extending config that removes the only auth plugin still cannot serve other hosts openly', async () => {
    const base = config('open/base.json', { plugins: [{ name: 'health' }, { name: 'auth-static' }, { name: 'config' }] });
    const file = config('open/child.json', { extends: './base.json', plugins: [{ name: 'auth-static', remove: true }] });
    void base;
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-extends-data-'));
    const start = (host: string) => startServer({ argv: ['--config', file], env: { GATEWAY_DATA_DIR: dataDir }, port: 0, host, logger: memoryLogger().logger });
    await expect(start('0.0.0.0')).rejects.toThrow(/Refusing to serve unauthenticated requests on 0\.0\.0\.0/);
    const loopback = await start('127.0.0.1');
    closing.push(() => loopback.close());
    expect(loopback.port).toBeGreaterThan(0);
  });

  test('removing auth-static from the default keeps the gateway closed: the control plane\'s stored keys still authenticate', async () => {
    const file = config('no-static.json', { extends: 'default', plugins: [{ name: 'auth-static', remove: true }] });
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-extends-data-'));
    const running = await startServer({ argv: ['--config', file], env: { GATEWAY_DATA_DIR: dataDir, GATEWAY_BOOTSTRAP_KEY: 'extends-bootstrap-key-0002' }, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
    closing.push(() => running.close());
    const res = await fetch(`${running.url}/v1/models`);
    expect(res.status).toBe(401);
    expect((await fetch(`${running.url}/v1/models`, { headers: { 'x-gateway-api-key': 'extends-bootstrap-key-0002' } })).status).toBe(200);
  });
});
