import { execFileSync, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { withDistLock } from '../helpers/dist-lock.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/*
 * The example plugin package (examples/acme-plugin), installed into a scratch
 * directory the way a team installs a plugin next to its server config, and
 * loaded by name by the real server: the built gateway (`dist/`, as `npm start`
 * runs it), which is not rebuilt or changed for the plugin.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEY = 'acme-example-key-1';

let scratch: string;
let mock: MockUpstream;
let gw: GatewayProcess;

/** A server config beside the installed package: bundled plugins by name, the package's two plugins by its name. */
function serverConfig(acmeOptions: Record<string, unknown>, extra: Record<string, unknown>[] = []) {
  return {
    host: '127.0.0.1',
    plugins: [
      { name: 'trace' },
      { name: 'health' },
      { name: 'auth-static' },
      { name: 'config' },
      { name: 'provider-headers' },
      { name: 'validation' },
      { name: 'guardrail-checks' },
      { name: 'acme-gateway-plugin', export: 'acmeChecks' },
      { name: 'guardrails' },
      { name: 'retry' },
      { name: 'acme-gateway-plugin', options: acmeOptions },
      ...extra,
      { name: 'request-log' },
    ],
  };
}

/** Runs the built server on a config file that must fail, and returns its exit code and stderr. */
function failingStart(file: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['dist/server/main.js', '--config', file], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: join(scratch, 'data') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

beforeAll(async () => {
  // The gateway as users run it: built once, before the plugin exists anywhere near it.
  // (Not while test/examples/install.test.ts packs dist/: see withDistLock.)
  await withDistLock(() => execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe' }));
  scratch = mkdtempSync(join(tmpdir(), 'gw-plugin-'));
  mkdirSync(join(scratch, 'node_modules'));
  cpSync(join(ROOT, 'examples/acme-plugin'), join(scratch, 'node_modules/acme-gateway-plugin'), { recursive: true });
  // Its peer dependency: the gateway package itself, installed beside it.
  symlinkSync(ROOT, join(scratch, 'node_modules/switchyard-gateway'), 'dir');
  writeFileSync(join(scratch, 'gateway.json'), JSON.stringify(serverConfig({ defaultRegion: 'eu' })));
  mock = await startMockOpenAI();
  gw = await startProcess(['--config', join(scratch, 'gateway.json')], { GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: join(scratch, 'data') }, { built: true });
}, 180_000);

afterAll(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
  await mock?.close();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

const chat = (config: Record<string, unknown>, content: string) =>
  fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': KEY,
      'x-gateway-config': JSON.stringify({ provider: 'acme', api_key: 'sk-acme', custom_host: mock.baseURL, ...config }),
    },
    body: JSON.stringify({ model: 'acme-1', messages: [{ role: 'user', content }] }),
  });

describe('the example package, loaded by name by the built server', () => {
  test('a request through the custom provider: its own config field, signed in prepare, answered end to end', async () => {
    const res = await chat({ acme_region: 'us' }, 'Hello');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-provider')).toBe('acme');
    expect((await res.json()).choices[0].message.content).toBe('Hello from the mock!');
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe('Bearer sk-acme');
    expect(seen.headers['x-acme-region']).toBe('us');
    expect(seen.headers['x-acme-signature']).toBe(createHmac('sha256', 'sk-acme').update(seen.body).digest('hex'));
  });

  test('the plugin option is the default region; a value the field refuses is a 400 naming it', async () => {
    expect((await chat({}, 'Hello')).status).toBe(200);
    expect(mock.requests.at(-1)!.headers['x-acme-region']).toBe('eu');
    const bad = await chat({ acme_region: 'mars' }, 'Hello');
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ code: 'invalid_request', message: 'Invalid config: acme_region: must be eu or us (got "mars")' });
  });

  test("the custom check denies with the package's own error code, before the provider is called", async () => {
    const before = mock.requests.length;
    const res = await chat({ input_guardrails: [{ id: 'digits', deny: true, 'acme.maxDigits': { max: 3 } }] }, 'My account is 12345678');
    expect(res.status).toBe(446);
    expect((await res.json()).error).toMatchObject({ code: 'acme_too_many_digits', type: 'guardrail_error' });
    expect(mock.requests.length).toBe(before);
  });

  test('a retry prepares (signs) each attempt again', async () => {
    mock.script.push({ status: 503 });
    const before = mock.requests.length;
    const res = await fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': KEY,
        'x-gateway-config': JSON.stringify({ provider: 'acme', api_key: 'sk-acme', custom_host: mock.baseURL, retry: { attempts: 1 } }),
      },
      body: JSON.stringify({ model: 'queued', messages: [{ role: 'user', content: 'again' }] }),
    });
    expect(res.status).toBe(200);
    const attempts = mock.requests.slice(before);
    expect(attempts).toHaveLength(2);
    for (const a of attempts) expect(a.headers['x-acme-signature']).toBe(createHmac('sha256', 'sk-acme').update(a.body).digest('hex'));
  });
});

describe('boot errors name the entry', () => {
  test('a bad option stops the start with the entry and the option path', async () => {
    const file = join(scratch, 'bad-option.json');
    writeFileSync(file, JSON.stringify(serverConfig({ defaultRegion: 'mars' })));
    const { code, stderr } = await failingStart(file);
    expect(code).toBe(1);
    expect(stderr).toContain('Plugin "acme-gateway-plugin" (plugins[10] of the server config) refused its options: Invalid options for acme: defaultRegion: defaultRegion must be eu or us');
  }, 30_000);

  test('a package that is not installed: could not be found', async () => {
    const file = join(scratch, 'missing.json');
    writeFileSync(file, JSON.stringify(serverConfig({}, [{ name: 'acme-gateway-plugin-missing' }])));
    const { code, stderr } = await failingStart(file);
    expect(code).toBe(1);
    expect(stderr).toContain('Plugin "acme-gateway-plugin-missing" (plugins[11] of the server config) could not be found');
  }, 30_000);
});
