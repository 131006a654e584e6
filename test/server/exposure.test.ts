import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../server/config.js';
import { checkAuthSetup, describeListening, isLoopbackHost, localUrl } from '../../server/exposure.js';
import { startProcess } from '../helpers/process.js';

/*
 * No server starts open by accident: without a plugin that authenticates
 * requests, the server listens on a loopback address only, unless its config
 * says "auth": "none"; either way it warns at every start. The start line
 * names the address really bound. Servers here may bind 0.0.0.0; the tests
 * connect to 127.0.0.1 only.
 */

/** Plugins that authenticate nobody (the README's plugin example had this shape). */
const OPEN_PLUGINS = [{ name: 'health' }, { name: 'config' }, { name: 'provider-headers' }, { name: 'openai' }];

async function configFile(config: Record<string, unknown>): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'gw-exposure-')), 'gateway.json');
  await writeFile(file, JSON.stringify(config));
  return file;
}

/** Runs the server on a config that must not start: its exit code and output. */
function failingStart(file: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', file], {
    env: { ...process.env, PORT: '0', GATEWAY_API_KEYS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  // A server that does start after all is stopped, so the test fails rather than hangs.
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

/** The JSON lines a process wrote. */
const lines = (output: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; [k: string]: unknown });

describe('the start rule', () => {
  test('a config without an auth plugin on 0.0.0.0 does not start, and says why and how to fix it', async () => {
    const { code, output } = await failingStart(await configFile({ plugins: OPEN_PLUGINS }));
    expect(code).toBe(1);
    expect(output).toContain('gateway failed to start: Refusing to serve unauthenticated requests on 0.0.0.0 (all interfaces)');
    expect(output).toContain('"auth-static"');
    expect(output).toContain('"host": "127.0.0.1"');
    expect(output).toContain('"auth": "none"');
    expect(output).not.toContain('gateway listening');
  }, 30_000);

  test('nor on another non-loopback address (::)', async () => {
    const { code, output } = await failingStart(await configFile({ host: '::', plugins: OPEN_PLUGINS }));
    expect(code).toBe(1);
    expect(output).toContain('Refusing to serve unauthenticated requests on :: (all interfaces)');
  }, 30_000);

  test('with "auth": "none" it starts on 0.0.0.0 and warns that it serves unauthenticated requests', async () => {
    const gw = await startProcess(['--config', await configFile({ auth: 'none', plugins: OPEN_PLUGINS })], {});
    try {
      const res = await fetch(`http://127.0.0.1:${gw.port}/health`);
      expect(res.status).toBe(200);
      const out = lines(gw.output());
      const warning = out.find((l) => l.level === 40 && String(l.msg).includes('serves unauthenticated requests'));
      expect(warning?.msg).toContain('"auth": "none"');
      expect(out.find((l) => String(l.msg).startsWith('gateway listening on'))?.msg).toBe(
        `gateway listening on http://0.0.0.0:${gw.port} (all interfaces; from this machine http://127.0.0.1:${gw.port})`,
      );
    } finally {
      gw.child.kill('SIGTERM');
      expect(await gw.exited).toBe(0);
    }
  }, 30_000);

  test('on 127.0.0.1 without an auth plugin it starts, warns, and its start line names 127.0.0.1', async () => {
    const gw = await startProcess(['--config', await configFile({ host: '127.0.0.1', plugins: OPEN_PLUGINS })], {});
    try {
      expect((await fetch(`http://127.0.0.1:${gw.port}/health`)).status).toBe(200);
      const out = lines(gw.output());
      expect(out.some((l) => l.level === 40 && String(l.msg).includes('serves unauthenticated requests') && String(l.msg).includes('loopback'))).toBe(true);
      expect(out.find((l) => String(l.msg).startsWith('gateway listening on'))?.msg).toBe(`gateway listening on http://127.0.0.1:${gw.port}`);
    } finally {
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
  }, 30_000);

  test('with an auth plugin it starts on 0.0.0.0 without the warning, the start line saying all interfaces', async () => {
    const gw = await startProcess(['--config', await configFile({ plugins: [{ name: 'health' }, { name: 'auth-static' }] })], { GATEWAY_API_KEYS: 'exposure-key-1' });
    try {
      expect((await fetch(`http://127.0.0.1:${gw.port}/health`)).status).toBe(200);
      const out = lines(gw.output());
      expect(out.some((l) => String(l.msg).includes('unauthenticated'))).toBe(false);
      expect(out.find((l) => String(l.msg).startsWith('gateway listening on'))?.msg).toContain(`http://0.0.0.0:${gw.port} (all interfaces`);
    } finally {
      gw.child.kill('SIGTERM');
      await gw.exited;
    }
  }, 30_000);

  test('"auth": "none" beside a plugin that authenticates does not start (one of the two is a mistake)', async () => {
    const { code, output } = await failingStart(await configFile({ auth: 'none', plugins: [{ name: 'health' }, { name: 'auth-static', options: { keys: ['k-123456789'] } }] }));
    expect(code).toBe(1);
    expect(output).toContain('says "auth": "none", but auth-static authenticates requests');
  }, 30_000);

  test('"auth" takes "none" only', async () => {
    await expect(loadServerConfig(await configFile({ auth: 'off', plugins: [] }))).rejects.toThrow(/auth/);
  });
});

describe('addresses', () => {
  test.each([
    ['localhost', true],
    ['LOCALHOST', true],
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['::ffff:10.0.0.5', false],
    ['gateway.internal', false],
    ['localhost.example', false],
  ])('%s is loopback: %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });

  test('the start line and the local URL of each kind of bound address', () => {
    expect(describeListening({ address: '0.0.0.0', family: 'IPv4', port: 8787 })).toBe('http://0.0.0.0:8787 (all interfaces; from this machine http://127.0.0.1:8787)');
    expect(describeListening({ address: '::', family: 'IPv6', port: 8787 })).toBe('http://[::]:8787 (all interfaces; from this machine http://[::1]:8787)');
    expect(describeListening({ address: '127.0.0.1', family: 'IPv4', port: 8787 })).toBe('http://127.0.0.1:8787');
    expect(describeListening({ address: '::1', family: 'IPv6', port: 8787 })).toBe('http://[::1]:8787');
    expect(localUrl({ address: '0.0.0.0', family: 'IPv4', port: 1 })).toBe('http://127.0.0.1:1');
    expect(localUrl({ address: '::1', family: 'IPv6', port: 1 })).toBe('http://[::1]:1');
  });

  test('the rule: which setups start, with or without a warning', () => {
    expect(checkAuthSetup({ authenticators: ['auth-static'], authNone: false, host: '0.0.0.0' })).toBeNull();
    expect(checkAuthSetup({ authenticators: [], authNone: false, host: '127.0.0.1' })).toContain('unauthenticated');
    expect(checkAuthSetup({ authenticators: [], authNone: false, host: 'localhost' })).toContain('unauthenticated');
    expect(checkAuthSetup({ authenticators: [], authNone: true, host: '0.0.0.0' })).toContain('"auth": "none"');
    expect(() => checkAuthSetup({ authenticators: [], authNone: false, host: '0.0.0.0' })).toThrow(/Refusing/);
    expect(() => checkAuthSetup({ authenticators: [], authNone: false, host: '192.0.2.10' })).toThrow(/Refusing to serve unauthenticated requests on 192\.0\.2\.10:/);
    expect(() => checkAuthSetup({ authenticators: ['control-plane', 'sso'], authNone: true, host: '127.0.0.1' })).toThrow(/control-plane, sso authenticate requests/);
  });
});
