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
import { startProcess } from '../helpers/process.js';

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
/** The default's list with plugins added where an entry without before/after goes: in front of the two that close first. */
const withAdded = (list: string[], ...added: string[]) => {
  const tail = list.slice(-2);
  expect(tail).toEqual(['batches', 'fine-tuning']);
  return [...list.slice(0, -2), ...added, ...tail];
};
/*
 * Every interface: the address the refusal is about. A start that is refused never binds it, and every start
 * these tests let through is on 127.0.0.1, so no test here listens on anything but loopback.
 */
const NOT_LOOPBACK = '0.0.0.0';

describe('"extends": "default"', () => {
  test('new plugins go after the default\'s own, in their order, but in front of batches and fine-tuning, which stay last so they close first', async () => {
    const c = await loadServerConfig(config('add.json', { extends: 'default', plugins: [{ name: './mine.js', options: { level: 2 } }, { name: 'pkg' }] }));
    expect(names(c)).toEqual(withAdded(defaults, './mine.js', 'pkg'));
    expect(c.plugins[defaults.length - 2]).toEqual({ name: './mine.js', options: { level: 2 } });
    expect(c.port).toBe(DEFAULT_CONFIG.port);
    expect(c).not.toHaveProperty('extends');
  });

  test('a plugin added after batches on purpose stays there', async () => {
    const c = await loadServerConfig(config('add-last.json', { extends: 'default', plugins: [{ name: 'pkg', after: 'fine-tuning' }] }));
    expect(names(c)).toEqual([...defaults, 'pkg']);
  });

  test('without extends, plugins is the whole list, as before', async () => {
    const c = await loadServerConfig(config('whole.json', { port: 9100, plugins: [{ name: 'health' }, { name: 'pkg' }] }));
    expect(c).toEqual({ port: 9100, plugins: [{ name: 'health' }, { name: 'pkg' }] });
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

  test('before or after on a plugin the default has moves it, with its new options', async () => {
    const c = await loadServerConfig(config('move-existing.json', { extends: 'default', plugins: [{ name: 'otel', options: { serviceName: 'gw' }, after: 'trace' }] }));
    expect(names(c).slice(0, 3)).toEqual(['trace', 'otel', 'traceparent']);
    expect(names(c).filter((n) => n === 'otel')).toHaveLength(1);
    expect(c.plugins[1]).toEqual({ name: 'otel', options: { serviceName: 'gw' } });
  });

  test('an anchor names one plugin: by name, or as name#export when a package has two', async () => {
    const twice = [{ name: 'pkg' }, { name: 'pkg', export: 'checks' }];
    const byKey = await loadServerConfig(config('anchor-key.json', { extends: 'default', plugins: [...twice, { name: './x.js', before: 'pkg#checks' }] }));
    expect(withAdded(defaults, 'pkg', './x.js', 'pkg#checks')).toEqual(names(byKey));
    // `pkg` is the entry without an export: its key is exactly the name.
    const byName = await loadServerConfig(config('anchor-name.json', { extends: 'default', plugins: [...twice, { name: './x.js', after: 'pkg' }] }));
    expect(names(byName)).toEqual(withAdded(defaults, 'pkg', './x.js', 'pkg#checks'));
    const ambiguous = config('anchor-ambiguous.json', { extends: 'default', plugins: [{ name: 'pkg', export: 'a' }, { name: 'pkg', export: 'b' }, { name: './x.js', after: 'pkg' }] });
    await expect(loadServerConfig(ambiguous)).rejects.toThrow(/plugins\[2\]: after names "pkg", which several plugins are called; name one as name#export/);
  });

  test('the same package twice with different exports are two plugins', async () => {
    // Changes apply in their order: the third entry replaces what the second added.
    const c = await loadServerConfig(config('exports.json', { extends: 'default', plugins: [{ name: 'pkg' }, { name: 'pkg', export: 'checks' }, { name: 'pkg', export: 'checks', options: { x: 1 } }] }));
    expect(names(c)).toEqual(withAdded(defaults, 'pkg', 'pkg#checks'));
    expect(c.plugins.find((p) => p.export === 'checks')).toEqual({ name: 'pkg', export: 'checks', options: { x: 1 } });
  });

  test('the default is the environment\'s: with REDIS_URL and DATABASE_URL, the shared stores\' variant', async () => {
    const env = { redisUrl: 'redis://127.0.0.1:6379', databaseUrl: 'postgres://postgres@127.0.0.1:5432/test' };
    const c = await loadServerConfig(config('env.json', { extends: 'default', plugins: [{ name: './mine.js' }] }), env);
    expect(names(c)).toEqual(withAdded(names(defaultConfig(env)), './mine.js'));
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

  test('server timeouts are checked on the merge: a limit may lean on the base, and a pair that breaks the rule only together is refused', async () => {
    config('timeouts/base.json', { server: { requestTimeoutMs: 200_000 }, plugins: [{ name: 'health' }] });
    const c = await loadServerConfig(config('timeouts/ok.json', { extends: './base.json', server: { headersTimeoutMs: 150_000 } }));
    expect(c.server).toEqual({ requestTimeoutMs: 200_000, headersTimeoutMs: 150_000 });
    const bad = config('timeouts/bad.json', { extends: 'default', server: { headersTimeoutMs: 150_000 } });
    await expect(loadServerConfig(bad)).rejects.toThrow(/bad\.json: server\.headersTimeoutMs: must not be more than requestTimeoutMs/);
  });

  test('a host in both allow-lists is kept once', async () => {
    config('hosts/base.json', { outbound: { allowHosts: ['10.0.0.1', '10.0.0.2'], allowPrivateHosts: false }, plugins: [{ name: 'health' }] });
    const c = await loadServerConfig(config('hosts/child.json', { extends: './base.json', outbound: { allowHosts: ['10.0.0.2', '10.0.0.3'] } }));
    expect(c.outbound).toEqual({ allowHosts: ['10.0.0.1', '10.0.0.2', '10.0.0.3'], allowPrivateHosts: false });
  });

  test('a chain: a file extends a file that extends the default (paths relative to each file)', async () => {
    config('chain/team/base.json', { extends: 'default', plugins: [{ name: 'otel', remove: true }] });
    const c = await loadServerConfig(config('chain/prod.json', { extends: './team/base.json', plugins: [{ name: './mine.js' }] }));
    expect(names(c)).toEqual(withAdded(defaults.filter((n) => n !== 'otel'), './mine.js'));
  });

  test('a plugin path in a base file is relative to that file, and a file extending it names the same plugin by its own relative path', async () => {
    const base = config('paths/shared/base.json', { extends: 'default', plugins: [{ name: './audit.js' }, { name: './tag.js', options: { a: 1 } }] });
    const c = await loadServerConfig(config('paths/prod.json', { extends: './shared/base.json', plugins: [{ name: './shared/tag.js', options: { a: 2 } }, { name: './shared/audit.js', remove: true }, { name: './own.js' }] }));
    // The replacement keeps the extending file's spelling: the server resolves it from that file's folder.
    expect(names(c)).toEqual(withAdded(defaults, './shared/tag.js', './own.js'));
    expect(c.plugins.find((p) => p.name.endsWith('tag.js'))).toEqual({ name: './shared/tag.js', options: { a: 2 } });
    // What the file extending it does not change, it loads from the base's folder.
    const kept = await loadServerConfig(config('paths/kept.json', { extends: './shared/base.json' }));
    expect(names(kept)).toEqual(withAdded(defaults, join(base, '../audit.js'), join(base, '../tag.js')));
  });

  test('a chain of ten files is fine; an eleventh is refused, naming the files', async () => {
    for (let i = 1; i <= 11; i++) config(`deep/c${i}.json`, i === 11 ? { plugins: [{ name: 'health' }] } : { extends: `./c${i + 1}.json` });
    // c2 → … → c11 is ten files.
    expect(names(await loadServerConfig(join(dir, 'deep/c2.json')))).toEqual(['health']);
    await expect(loadServerConfig(join(dir, 'deep/c1.json'))).rejects.toThrow(/extends goes more than 10 files deep \(.*c1\.json → .*c11\.json\)/);
  });
});

describe('mistakes, each a start error naming the file', () => {
  test.each([
    ['removing a plugin the base does not have', { extends: 'default', plugins: [{ name: 'no-such', remove: true }] }, /plugins\[0\]: "no-such" is not among the extended config's plugins, so it cannot be removed \(they are: trace, /],
    ['an anchor that is not there', { extends: 'default', plugins: [{ name: './x.js', after: 'nope' }] }, /plugins\[0\]: after names "nope", which is not among the plugins/],
    ['both anchors', { extends: 'default', plugins: [{ name: './x.js', after: 'trace', before: 'health' }] }, /give before or after, not both/],
    ['remove with options', { extends: 'default', plugins: [{ name: 'otel', remove: true, options: {} }] }, /takes only its name/],
    ['a change in a config that extends nothing', { plugins: [{ name: 'health' }, { name: 'otel', remove: true }] }, /plugins\[1\]\.remove changes the plugins of a config this one extends, but it extends none: without "extends", "plugins" is the whole list/],
    ['an anchor in a config that extends nothing', { plugins: [{ name: 'health', before: 'trace' }] }, /plugins\[0\]\.before changes the plugins/],
    ['extends that is not a string', { extends: 3, plugins: [] }, /extends: must be "default" or the path of another config file/],
    ['remove that is not true', { extends: 'default', plugins: [{ name: 'otel', remove: false }] }, /plugins\[0\]\.remove: must be true/],
    ['a bad entry, named by its place in the file rather than in the merged list', { extends: 'default', plugins: [{ name: 'openai', options: [] }] }, /bad-\w+\.json: plugins\[0\]\.options/],
    ['an unknown field', { extends: 'default', prot: 80 }, /bad-\w+\.json: prot/],
    ['a base file that is not there', { extends: './missing.json', plugins: [] }, /Cannot read the server config .*missing\.json \(extended by .*\)/],
    ['a merged config the schema refuses', { extends: 'default', port: 'eighty' }, /the server config .*: port/],
  ])('%s', async (_what, value, message) => {
    await expect(loadServerConfig(config(`bad-${Math.random().toString(36).slice(2)}.json`, value))).rejects.toThrow(message);
  });

  test('a mistake in a base file names that file and the file extending it', async () => {
    config('bad-base/base.json', { plugins: [{ name: 'health', options: 'x' }] });
    await expect(loadServerConfig(config('bad-base/child.json', { extends: './base.json' }))).rejects.toThrow(/the server config .*bad-base\/base\.json \(extended by .*child\.json\): plugins\[0\]\.options/);
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

  test('a check plugin and a provider plugin added at the end of the default (after guardrails, the strategies and every provider) deny and answer requests: taps are ordered by their stages, not the list', async () => {
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
    // Where they land: after the plugin that runs checks, the strategies that call providers, and every bundled provider.
    const list = names(await loadServerConfig(file));
    const at = list.indexOf('./late-plugins.mjs#checks');
    for (const earlier of ['guardrail-checks', 'guardrails', 'strategy-single', 'strategy-fallback', 'retry', 'openai', 'proxy', 'request-log']) expect(list.indexOf(earlier)).toBeLessThan(at);
    expect(list.slice(at)).toEqual(['./late-plugins.mjs#checks', './late-plugins.mjs#provider', 'batches', 'fine-tuning']);
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
    const passed = await post('input_guardrails', 'Hi');
    expect(passed.status).toBe(200);
    expect(passed.headers.get('x-gateway-provider')).toBe('late');
    expect((await passed.json()).choices[0].message.content).toBe('The answer is 42');
    const denied = await post('input_guardrails', 'Call 555 0100');
    expect(denied.status).toBe(446);
    expect((await denied.json()).error.code).toBe('late_digits');
    // The input check refused before any call: the provider was called once so far.
    expect(mock.requests.length).toBe(1);
    const out = await post('output_guardrails');
    expect(out.status).toBe(446);
    expect(mock.requests.length).toBe(2);
    expect(mock.requests[0]!.headers.authorization).toBe('Bearer sk-late');
  });

  test('an extending config that removes the only auth plugin refuses to start on a non-loopback host unless it says "auth": "none"', async () => {
    config('open/base.json', { host: NOT_LOOPBACK, plugins: [{ name: 'health' }, { name: 'auth-static' }, { name: 'config' }] });
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-extends-data-'));
    const start = (file: string, host?: string) => startServer({ argv: ['--config', file], env: { GATEWAY_DATA_DIR: dataDir }, port: 0, ...(host === undefined ? {} : { host }), logger: memoryLogger().logger });
    const open = config('open/child.json', { extends: './base.json', plugins: [{ name: 'auth-static', remove: true }] });
    await expect(start(open)).rejects.toThrow(`Refusing to serve unauthenticated requests on ${NOT_LOOPBACK}`);
    // On loopback it starts (with its warning), as a config without extends would.
    const loopback = await start(open, '127.0.0.1');
    closing.push(() => loopback.close());
    expect(loopback.port).toBeGreaterThan(0);
    // With "auth": "none" the refusal is lifted on purpose: the merged config carries it (started here on loopback only).
    const none = config('open/none.json', { extends: './base.json', auth: 'none', plugins: [{ name: 'auth-static', remove: true }] });
    expect((await loadServerConfig(none)).auth).toBe('none');
    const allowed = await start(none, '127.0.0.1');
    closing.push(() => allowed.close());
    expect(allowed.port).toBeGreaterThan(0);
  });

  test('the real command refuses an open gateway built by removing both authenticators from the default', async () => {
    const file = config('open-default.json', {
      extends: 'default',
      host: NOT_LOOPBACK,
      // scim and sso need the control plane, so they go with it.
      plugins: ['auth-static', 'control-plane', 'scim', 'sso'].map((name) => ({ name, remove: true })),
    });
    const started = startProcess(['--config', file], {});
    await expect(started).rejects.toThrow(/server exited early \(1\):[\s\S]*gateway failed to start: Refusing to serve unauthenticated requests on 0\.0\.0\.0/);
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
