import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * The official MCP conformance suite (@modelcontextprotocol/conformance, pinned) run from tests: its CLI in a child
 * process (it runs and exits as soon as it is imported), the results read from the checks.json files it writes.
 * On Node 20 it is preloaded with node20-fs-globsync.mjs: the package imports fs.globSync (Node 22), used only by
 * its tier-check command, which these tests never run.
 */

const require = createRequire(import.meta.url);
const CLI = require.resolve('@modelcontextprotocol/conformance/dist/index.js');
const SHIM = fileURLToPath(new URL('./node20-fs-globsync.mjs', import.meta.url));
const NEEDS_SHIM = typeof (require('node:fs') as { globSync?: unknown }).globSync !== 'function';

/** One scenario's outcome: its checks by status. */
export interface ScenarioResult {
  scenario: string;
  passed: number;
  failed: number;
  warnings: number;
  /** The failing and warning checks: id and message. */
  problems: string[];
}

function run(args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(NEEDS_SHIM ? ['--import', SHIM] : []), CLI, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, output });
    });
  });
}

async function results(dir: string, mode: 'server' | 'client'): Promise<ScenarioResult[]> {
  const out: ScenarioResult[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.name === 'checks.json') {
        const checks = JSON.parse(await readFile(path, 'utf8')) as Array<{ id: string; status: string; errorMessage?: string }>;
        let scenario = relative(dir, at).split(sep).join('/').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
        if (mode === 'server') scenario = scenario.replace(/^server-/, '');
        const count = (s: string) => checks.filter((c) => c.status === s).length;
        const problems = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
        out.push({ scenario, passed: count('SUCCESS'), failed: count('FAILURE'), warnings: count('WARNING'), problems });
      }
    }
  };
  await walk(dir);
  return out.sort((a, b) => a.scenario.localeCompare(b.scenario));
}

/** The suite's server scenarios (`--suite all`) of one spec version against the MCP endpoint at `url`. */
export async function serverConformance(url: string, specVersion: string, timeoutMs = 240_000): Promise<{ code: number; output: string; results: ScenarioResult[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-conformance-server-'));
  const { code, output } = await run(['server', '--url', url, '--suite', 'all', '--spec-version', specVersion, '-o', dir], {}, timeoutMs);
  return { code, output, results: await results(dir, 'server') };
}

/** One client scenario: the suite starts its server and runs `command <server URL>` with `env`. */
export async function clientConformance(command: string, scenario: string, env: Record<string, string>, timeoutMs = 120_000): Promise<{ code: number; output: string; results: ScenarioResult[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'mcp-conformance-client-'));
  const { code, output } = await run(['client', '--command', command, '--scenario', scenario, '--timeout', '60000', '-o', dir], env, timeoutMs);
  return { code, output, results: await results(dir, 'client') };
}

/** The reference server for the server scenarios (test/mocks/mcp-reference-server.mjs), in its own process on 127.0.0.1. */
export async function startReferenceServer(): Promise<{ url: string; close(): Promise<void> }> {
  const script = fileURLToPath(new URL('../mocks/mcp-reference-server.mjs', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, [script, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /MCP_SERVER_URL=(\S+)/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the reference MCP server exited (${code})`)));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
