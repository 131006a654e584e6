import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startOpenAIContractMock, type ContractMock } from '../../server/testing/index.js';
import { startQuillMock } from '../../examples/quill-provider/test/quill-mock.js';
import { withDistLock } from '../helpers/dist-lock.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';

/*
 * The gateway the npm way, as a team deploys it: `npm pack` the gateway and the example plugin packages,
 * install the tarballs with npm into a fresh deployment folder (no links made by hand), scaffold two more
 * plugins with the installed bin, run their tests on the kit, and serve a config that extends the default
 * with all of them, through `node_modules/.bin/switchyard-gateway serve`.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const KEY = 'install-test-key-0001';
const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };

let scratch: string;
let deploy: string;
let install: { stdout: string; stderr: string };
let mock: ContractMock;
let quillMock: ContractMock;
let gw: GatewayProcess;

/** npm, quietly, with the registry only (its cache first); better-sqlite3 builds from source instead of fetching a prebuilt binary. */
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, env: { ...process.env, npm_config_build_from_source: 'true' }, maxBuffer: 64 * 1024 * 1024 });

/** Packs a package folder into the scratch folder; returns the tarball's path. */
async function pack(dir: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--pack-destination', scratch, '--silent'], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
  return join(scratch, stdout.trim().split('\n').at(-1)!);
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'gw-install-'));
  deploy = join(scratch, 'deploy');
  mkdirSync(deploy);
  // `npm pack` of the gateway runs its prepack (the build), as a publish would.
  // The gateway's pack builds dist/, which test/examples/acme-plugin.test.ts builds too: one at a time.
  const gateway = await withDistLock(() => pack(ROOT));
  const [acme, quill] = [await pack(join(ROOT, 'examples/acme-plugin')), await pack(join(ROOT, 'examples/quill-provider'))];
  writeFileSync(
    join(deploy, 'package.json'),
    JSON.stringify({
      name: 'my-gateway',
      private: true,
      type: 'module',
      dependencies: { 'switchyard-gateway': `file:${gateway}`, 'acme-gateway-plugin': `file:${acme}`, 'quill-gateway-provider': `file:${quill}` },
      // What the scaffolded plugins' tests run with, at the gateway's own versions.
      devDependencies: { vitest: own.devDependencies.vitest, openai: own.devDependencies.openai, '@anthropic-ai/sdk': own.devDependencies['@anthropic-ai/sdk'] },
      allowScripts: { 'better-sqlite3': true, '@scarf/scarf': false },
    }),
  );
  install = await npm(['install'], deploy);
  const bin = join(deploy, 'node_modules/.bin/switchyard-gateway');
  await run(process.execPath, [bin, 'new', 'provider', join(deploy, 'plugins/team-llm')]);
  await run(process.execPath, [bin, 'new', 'check', join(deploy, 'plugins/team-rules')]);
  writeFileSync(
    join(deploy, 'gateway.json'),
    JSON.stringify({
      extends: 'default',
      host: '127.0.0.1',
      plugins: [
        { name: 'acme-gateway-plugin', options: { defaultRegion: 'us' } },
        { name: 'acme-gateway-plugin', export: 'acmeChecks' },
        { name: 'quill-gateway-provider' },
        { name: './plugins/team-llm/index.js' },
        { name: './plugins/team-rules/index.js' },
      ],
    }),
  );
  mock = await startOpenAIContractMock('/v1');
  quillMock = await startQuillMock();
  gw = await startProcess(['serve', '--config', join(deploy, 'gateway.json')], { GATEWAY_API_KEYS: KEY, GATEWAY_BOOTSTRAP_KEY: `${KEY}-bootstrap` }, { built: bin });
}, 600_000);

afterAll(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.exited;
  await mock?.close();
  await quillMock?.close();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

const chat = (target: Record<string, unknown>, content: string, extra: Record<string, unknown> = {}) =>
  fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': KEY, 'x-gateway-config': JSON.stringify({ api_key: 'sk-deploy', custom_host: mock.baseURL, ...target }) },
    body: JSON.stringify({ model: 'a-model', messages: [{ role: 'user', content }], ...extra }),
  });

describe('installed from tarballs with npm', () => {
  test('npm resolves the plugins\' peer dependency to the one installed gateway, with no install-script warning', () => {
    const pkg = (p: string) => JSON.parse(readFileSync(join(deploy, 'node_modules', p, 'package.json'), 'utf8')) as { version: string };
    expect(pkg('switchyard-gateway').version).toBe(own.version);
    expect(() => readFileSync(join(deploy, 'node_modules/acme-gateway-plugin/node_modules/switchyard-gateway/package.json'))).toThrow();
    expect(`${install.stdout}${install.stderr}`).not.toMatch(/not yet covered by allowScripts/);
  });

  test('the bin tells its version', async () => {
    const { stdout } = await run(process.execPath, [join(deploy, 'node_modules/.bin/switchyard-gateway'), 'version']);
    expect(stdout.trim()).toBe(own.version);
  });

  test.each(['team-llm', 'team-rules'])('the scaffolded %s package passes its own tests on the kit, out of the box', async (name) => {
    // vitest exits non-zero (and execFile rejects) when a test fails; the summary says how many passed.
    const { stdout, stderr } = await run(process.execPath, [join(deploy, 'node_modules/vitest/vitest.mjs'), 'run'], { cwd: join(deploy, 'plugins', name), env: { ...process.env, CI: 'true', NO_COLOR: '1' } });
    const summary = `${stdout}${stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
    expect(summary).toMatch(/Tests\s+\d+ passed \(\d+\)/);
    expect(summary).not.toMatch(/\d+ failed/);
  }, 180_000);
});

test('a plugin outside the deployment folder (as a npm link leaves it) fails to load with a message that says where it must go', async () => {
  const elsewhere = join(scratch, 'elsewhere');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'linked.mjs'), "import { v } from 'switchyard-gateway/sdk';\nexport default () => ({ name: 'linked', apply() { void v; } });\n");
  writeFileSync(join(deploy, 'linked.json'), JSON.stringify({ extends: 'default', host: '127.0.0.1', plugins: [{ name: join(elsewhere, 'linked.mjs') }] }));
  const failed = await run(process.execPath, [join(deploy, 'node_modules/.bin/switchyard-gateway'), 'serve', '--config', join(deploy, 'linked.json')], {
    env: { ...process.env, PORT: '0', GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: join(scratch, 'linked-data') },
  }).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  );
  expect(failed?.code).toBe(1);
  expect(failed?.stderr).toContain("Cannot find package 'switchyard-gateway' imported from");
  expect(failed?.stderr).toContain('install the plugin into the deployment folder with npm');
}, 60_000);

describe('served by the bin, with a config that extends the default', () => {
  test('chat through a package\'s provider (acme), signed, in its default region', async () => {
    const res = await chat({ provider: 'acme' }, 'Hello');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-provider')).toBe('acme');
    expect((await res.json()).choices[0].message.content).toBe('Hello!');
    expect(mock.requests.at(-1)!.headers['x-acme-region']).toBe('us');
    expect(mock.requests.at(-1)!.headers['x-acme-signature']).toMatch(/^[0-9a-f]{64}$/);
  });

  test('chat and a stream through the foreign-format provider (quill): its wire format both ways, usage mapped', async () => {
    const res = await chat({ provider: 'quill', custom_host: quillMock.baseURL }, 'Hello');
    expect(res.status).toBe(200);
    const json = await res.json();
    expect(json.choices[0].message.content).toBe('Hello!');
    expect(json.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
    expect(quillMock.requests.at(-1)!.path).toBe('/v1/generate');
    expect(quillMock.requests.at(-1)!.headers['x-quill-key']).toBe('sk-deploy');
    const stream = await chat({ provider: 'quill', custom_host: quillMock.baseURL }, 'Hello', { stream: true });
    const text = await stream.text();
    expect(text).toContain('"content":"Hello"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  test('a stream through a scaffolded provider (team_llm), ending with [DONE]', async () => {
    const res = await chat({ provider: 'team_llm' }, 'Hello', { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text).toContain('"content":"Hello"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  test.each([
    ['acme.maxDigits', { max: 3 }, 'My card is 4111 1111 1111 1111', 'acme_too_many_digits'],
    ['team_rules.maxLength', { max: 10 }, 'This sentence is far too long', 'team_rules_too_long'],
  ])('a request denied by a package\'s check (%s): 446 with its own code, the provider never called', async (check, parameters, content, code) => {
    const before = mock.requests.length;
    const res = await chat({ provider: 'acme', input_guardrails: [{ id: 'rule', deny: true, [check]: parameters }] }, content);
    expect(res.status).toBe(446);
    expect((await res.json()).error).toMatchObject({ code, type: 'guardrail_error' });
    expect(mock.requests.length).toBe(before);
  });

  test('the default\'s own plugins are all there: auth refuses a request without a key, /health and /dashboard answer', async () => {
    const noKey = await fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noKey.status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${gw.port}/health`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${gw.port}/dashboard/`)).status).toBe(200);
  });
});
