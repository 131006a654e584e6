import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { loadPlugins } from '../../server/catalog.js';
import { configFileFrom, loadServerConfig } from '../../server/config.js';
import { DEFAULT_CONFIG, defaultConfig } from '../../server/default-config.js';
import { readEnv } from '../../server/env.js';
import { startServer } from '../../server/server.js';
import { memoryLogger } from '../helpers/gateway.js';

async function tempFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-config-'));
  const file = join(dir, 'gateway.json');
  await writeFile(file, text);
  return file;
}

describe('server config', () => {
  test('--config wins over GATEWAY_CONFIG', () => {
    expect(configFileFrom(['--config', 'a.json'], 'b.json')).toBe('a.json');
    expect(configFileFrom(['--config=c.json'], 'b.json')).toBe('c.json');
    expect(configFileFrom([], 'b.json')).toBe('b.json');
    expect(configFileFrom([], undefined)).toBeUndefined();
    expect(() => configFileFrom(['--config'], undefined)).toThrow(/needs a file/);
  });

  test('no file: the bundled default, which loads every bundled plugin but the opt-in stores', async () => {
    expect(await loadServerConfig(undefined)).toBe(DEFAULT_CONFIG);
    const names = DEFAULT_CONFIG.plugins.map((p) => p.name).sort();
    const { CATALOG } = await import('../../server/catalog.js');
    // The embedded SQLite store is in (the control plane and the request log keep their state there), and so are the
    // durable log store, its routes and /metrics, and the semantic cache (it embeds with the request's own target). Opt-in:
    // stores that need a service (redis, postgres), the Redis cache store, and pricing overrides.
    const optIn = ['redis', 'postgres', 'cache-redis', 'pricing'];
    expect(names).toEqual(Object.keys(CATALOG).filter((n) => !optIn.includes(n)).sort());
  });

  test('REDIS_URL and DATABASE_URL turn the default into the shared-stores config: limits, breaker and cache in Redis, control plane and log in PostgreSQL', async () => {
    expect(defaultConfig({ redisUrl: undefined, databaseUrl: undefined })).toBe(DEFAULT_CONFIG);
    const names = (c: { plugins: { name: string; options?: Record<string, unknown> }[] }) => c.plugins.map((p) => p.name);
    const both = await loadServerConfig(undefined, { redisUrl: 'redis://r:6379', databaseUrl: 'postgres://p/db' });
    expect(names(both)[0]).toBe('redis');
    expect(names(both)).toContain('postgres');
    expect(names(both)).toContain('cache-redis');
    for (const gone of ['sqlite', 'cache-memory']) expect(names(both)).not.toContain(gone);
    for (const shared of ['limits', 'breaker', 'cache']) expect(both.plugins.find((p) => p.name === shared)!.options).toEqual({ store: 'redis' });
    // Everything else as in the default, in its order.
    const swapped = new Map([['sqlite', 'postgres'], ['cache-memory', 'cache-redis']]);
    expect(names(both).slice(1)).toEqual(names(DEFAULT_CONFIG).map((n) => swapped.get(n) ?? n));
    const redisOnly = defaultConfig({ redisUrl: 'redis://r:6379', databaseUrl: undefined });
    expect(names(redisOnly)).toContain('sqlite');
    const dbOnly = defaultConfig({ redisUrl: undefined, databaseUrl: 'postgres://p/db' });
    expect(names(dbOnly)).toEqual(names(DEFAULT_CONFIG).map((n) => (n === 'sqlite' ? 'postgres' : n)));
    expect(dbOnly.plugins.find((p) => p.name === 'limits')!.options).toBeUndefined();
  });

  test('the default logs every request: the log store (in the default SQLite store), its routes and /metrics come after the proxy and before the stdout line', () => {
    const names = DEFAULT_CONFIG.plugins.map((p) => p.name);
    expect(names.indexOf('sqlite')).toBeLessThan(names.indexOf('log-store'));
    expect(names.slice(names.indexOf('proxy'))).toEqual(['proxy', 'log-store', 'log-api', 'metrics', 'otel', 'request-log', 'batches', 'fine-tuning']);
  });

  test('batches come after the SQL and log stores, so they close first: lines in flight at shutdown are recorded and logged', () => {
    const names = DEFAULT_CONFIG.plugins.map((p) => p.name);
    expect(names.indexOf('batches')).toBeGreaterThan(names.indexOf('sqlite'));
    expect(names.indexOf('batches')).toBeGreaterThan(names.indexOf('log-store'));
  });

  test('a valid file is parsed', async () => {
    const file = await tempFile(JSON.stringify({ port: 9000, maxBodyBytes: 1024, plugins: [{ name: 'openai', options: { apiKey: 'sk-x' } }] }));
    const config = await loadServerConfig(file);
    expect(config.port).toBe(9000);
    expect(config.plugins[0]).toEqual({ name: 'openai', options: { apiKey: 'sk-x' } });
  });

  test.each([
    ['{ nope', /not valid JSON/],
    ['{"plugins":[],"extra":1}', /extra/],
    ['{"plugins":[],"port":70000}', /port/],
    ['{"plugins":[{"name":"openai","options":[]}]}', /plugins\[0\]\.options/],
    ['{"plugins":[],"server":{"headersTimeoutMs":5000,"requestTimeoutMs":1000}}', /server\.headersTimeoutMs: must not be more than requestTimeoutMs/],
    ['{"plugins":[],"server":{"headersTimeoutMs":0}}', /server\.headersTimeoutMs/],
    ['{"plugins":[],"server":{"bodyTimeoutMs":1}}', /server\.bodyTimeoutMs/],
    ['{"plugins":[],"maxJsonDepth":0}', /maxJsonDepth/],
  ])('an invalid file %s is refused with the path', async (text, message) => {
    await expect(loadServerConfig(await tempFile(text))).rejects.toThrow(message);
  });

  test('a missing file is refused', async () => {
    await expect(loadServerConfig('/nonexistent/gateway.json')).rejects.toThrow(/Cannot read/);
  });

  test('unknown plugin names say where they were looked for and list the bundled ones; bad plugin options name the plugin', async () => {
    const env = readEnv({});
    await expect(loadPlugins({ plugins: [{ name: 'nope' }] }, env)).rejects.toThrow(/Plugin "nope" \(plugins\[0\] of the server config\) could not be found: .*Bundled plugins: .*openai/);
    await expect(loadPlugins({ plugins: [{ name: 'openai', options: { baseURL: 'x' } }] }, env)).rejects.toThrow(/Invalid options for openai: baseURL/);
  });

  test("the control plane's agentCardTtlMs, from before it moved to the a2a plugin, still boots and is the a2a plugin's", async () => {
    const env = readEnv({});
    const plugins = (ttl: unknown, a2a: Record<string, unknown> = {}) => loadPlugins({ plugins: [{ name: 'control-plane', options: { agentCardTtlMs: ttl } }, { name: 'a2a', options: a2a }] }, env);
    expect((await plugins(60_000)).map((p) => p.name)).toEqual(['control-plane', 'a2a']);
    await expect(plugins('soon')).rejects.toThrow(/Invalid options for a2a: agentCardTtlMs/);
    // The a2a plugin's own option wins.
    expect((await plugins('soon', { agentCardTtlMs: 1000 })).map((p) => p.name)).toEqual(['control-plane', 'a2a']);
  });
});

describe('outbound in the server config', () => {
  test('allowHosts entries are checked at start, naming the bad one', async () => {
    const good = await tempFile(JSON.stringify({ outbound: { allowHosts: ['localhost:11434', '*.internal.example', '10.0.0.0/8'], allowPrivateHosts: false }, plugins: [] }));
    expect((await loadServerConfig(good)).outbound).toEqual({ allowHosts: ['localhost:11434', '*.internal.example', '10.0.0.0/8'], allowPrivateHosts: false });
    const bad = await tempFile(JSON.stringify({ outbound: { allowHosts: ['ok.lan', 'ollama.lan/v1'] }, plugins: [] }));
    await expect(loadServerConfig(bad)).rejects.toThrow(/outbound.allowHosts\[1\]: "ollama.lan\/v1" is not an address range/);
    const unknown = await tempFile(JSON.stringify({ outbound: { denyHosts: [] }, plugins: [] }));
    await expect(loadServerConfig(unknown)).rejects.toThrow(/outbound.denyHosts/);
  });
});

describe('environment contract', () => {
  test('defaults and parsing', () => {
    const env = readEnv({});
    // Private hosts are refused unless the config file or GATEWAY_ALLOW_PRIVATE_HOSTS / GATEWAY_ALLOW_HOSTS say otherwise.
    expect(env).toMatchObject({ port: undefined, configFile: undefined, apiKeys: [], logLevel: 'info', allowPrivateHosts: undefined, allowHosts: [] });
    expect(env.dataDir.endsWith('/data')).toBe(true);
    const set = readEnv({ PORT: '9001', GATEWAY_CONFIG: 'g.json', GATEWAY_DATA_DIR: '/tmp/gw', GATEWAY_API_KEYS: ' a , b,,', GATEWAY_LOG_LEVEL: 'debug', GATEWAY_ALLOW_PRIVATE_HOSTS: '0', GATEWAY_ALLOW_HOSTS: 'localhost:11434, 10.0.0.0/8,,' });
    expect(set).toEqual({ port: 9001, configFile: 'g.json', dataDir: '/tmp/gw', apiKeys: ['a', 'b'], logLevel: 'debug', allowPrivateHosts: false, allowHosts: ['localhost:11434', '10.0.0.0/8'], redisUrl: undefined, databaseUrl: undefined, metricsToken: undefined });
    expect(() => readEnv({ PORT: 'http' })).toThrow(/PORT/);
    expect(readEnv({ GATEWAY_ALLOW_PRIVATE_HOSTS: '1' }).allowPrivateHosts).toBe(true);
    expect(() => readEnv({ GATEWAY_ALLOW_PRIVATE_HOSTS: 'true' })).toThrow(/GATEWAY_ALLOW_PRIVATE_HOSTS must be 1 or 0/);
    expect(() => readEnv({ GATEWAY_ALLOW_HOSTS: 'ok.lan,10.0.0.0/40' })).toThrow(/GATEWAY_ALLOW_HOSTS: "10.0.0.0\/40" is not an address range/);
    expect(readEnv({ GATEWAY_PUBLIC_URL: 'https://gateway.example.com/' }).publicUrl).toBe('https://gateway.example.com');
    expect(() => readEnv({ GATEWAY_PUBLIC_URL: 'gateway.example.com' })).toThrow(/GATEWAY_PUBLIC_URL must be an http\(s\) URL/);
    expect(() => readEnv({ GATEWAY_PUBLIC_URL: 'https://user:pw@gateway.example.com' })).toThrow(/without user info/);
  });

  test('with no key configured, the control plane generates a first admin key, prints it once to stderr and accepts it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'gw-keygen-'));
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const running = await startServer({ env: { GATEWAY_DATA_DIR: dataDir }, config: DEFAULT_CONFIG, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
    await running.gateway.ready;
    const printed = write.mock.calls.map((c) => String(c[0])).join('');
    write.mockRestore();
    const key = printed.match(/x-gateway-api-key: (gwk-\S+)/)?.[1];
    expect(key).toBeDefined();
    expect(printed).toContain('GATEWAY_BOOTSTRAP_KEY');
    const ok = await fetch(`${running.url}/v1/workspaces`, { headers: { 'x-gateway-api-key': key! } });
    expect(ok.status).toBe(200);
    const denied = await fetch(`${running.url}/v1/models`, { headers: { 'x-gateway-api-key': 'gw-guess-guess' } });
    expect(denied.status).toBe(401);
    await running.close();

    // Second start on the same data: nothing printed, the same key still works.
    const again = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const second = await startServer({ env: { GATEWAY_DATA_DIR: dataDir }, config: DEFAULT_CONFIG, port: 0, host: '127.0.0.1', logger: memoryLogger().logger });
    await second.gateway.ready;
    const printedAgain = again.mock.calls.map((c) => String(c[0])).join('');
    again.mockRestore();
    expect(printedAgain).not.toContain('x-gateway-api-key');
    expect((await fetch(`${second.url}/v1/workspaces`, { headers: { 'x-gateway-api-key': key! } })).status).toBe(200);
    await second.close();
  });
});
