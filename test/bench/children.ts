import { fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pin } from './pin.js';

/** One process under test. */
export interface Child {
  name: string;
  url: string;
  pid: number;
}

const running = new Set<ChildProcess>();
const byPid = new Map<number, ChildProcess>();
/** Children being stopped on purpose (stopChild): their exit is not "early". */
const expected = new Set<ChildProcess>();
let stopping = false;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

// Last line of defence: whatever ends the orchestrator (normal end, throw, signal), no child survives it.
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping children\n`);
    process.exit(130);
  });
}

/** Stops `child` with the others (stopAll, or the orchestrator's end), and says when it ends early. */
export function track(child: ChildProcess, name: string): void {
  running.add(child);
  if (child.pid !== undefined) byPid.set(child.pid, child);
  child.once('exit', (code, signal) => {
    running.delete(child);
    if (child.pid !== undefined) byPid.delete(child.pid);
    // A reaper ends with its gateway (reaper.ts): not early.
    if (!stopping && !expected.delete(child) && name !== 'reaper') process.stderr.write(`bench: ${name} exited early (code ${code}, signal ${signal})\n`);
  });
}

/** Stops one child (SIGTERM, SIGKILL after 3 s) and waits for it: a fresh process of the same system comes next. */
export async function stopChild(pid: number): Promise<void> {
  const child = byPid.get(pid);
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  expected.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/** SIGTERM every child (the gateway drains and flushes its log), SIGKILL whatever is left after 3 s. */
export async function stopAll(): Promise<void> {
  stopping = true;
  const exits = [...running].map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()))));
  for (const c of running) c.kill('SIGTERM');
  const timer = setTimeout(() => running.forEach((c) => c.kill('SIGKILL')), 3000);
  await Promise.all(exits);
  clearTimeout(timer);
}

/** Cores every process under test is put on (pin.ts); null: wherever the scheduler puts it. */
let targetCores: string | null = null;

/** From now on, every child but the mock and the reapers runs on `cores` (all its threads). */
export function pinTargets(cores: string | null): void {
  targetCores = cores;
}

/** A child that reports its URL over IPC once listening: TypeScript through tsx, plain `.mjs` by plain node. */
export function forkChild(name: string, file: string, args: string[] = []): Promise<Child> {
  const execArgv = file.endsWith('.ts') ? ['--import', 'tsx'] : [];
  if (process.env.BENCH_PROFILE !== undefined && name === process.env.BENCH_PROFILE) execArgv.push('--cpu-prof', '--cpu-prof-dir=/tmp/prof');
  const child = fork(here(file), args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  track(child, name);
  return new Promise((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve({ name, url: m.url, pid: child.pid! }));
    child.once('exit', () => reject(new Error(`${name} exited before listening`)));
    child.once('error', reject);
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The node flags `npm start` passes (package.json `config.nodeFlags`), so the benchmark runs what users run. */
function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(here('../../package.json'), 'utf8')) as { config?: { nodeFlags?: string } };
  return (pkg.config?.nodeFlags ?? '').split(/\s+/).filter((f) => f !== '');
}

/**
 * The built gateway exactly as `npm start` runs it: default config (or `config`, a file), logging on.
 * `nodeFlags` go after `npm start`'s own (a profiler's, such as `--perf-basic-prof`).
 * Its log lines go to `logFile`, since writing them is part of what a request costs.
 */
export async function startGateway(apiKey: string, logFile: string, options: { name?: string; config?: string; dataDir?: string; nodeFlags?: string[] } = {}): Promise<Child> {
  const name = options.name ?? 'gateway';
  const port = await freePort();
  // A GATEWAY_CONFIG (or any other GATEWAY_*) in the caller's shell must not replace the default config, nor
  // REDIS_URL / DATABASE_URL turn it into the shared-stores one.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GATEWAY_') && k !== 'REDIS_URL' && k !== 'DATABASE_URL'));
  const out = openSync(logFile, 'w');
  const child = spawn(process.execPath, [...startFlags(), ...(options.nodeFlags ?? []), ...(process.env.BENCH_PROFILE === name ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), here('../../dist/server/main.js'), ...(options.config === undefined ? [] : ['--config', options.config])], {
    // A fresh data dir unless given: the control plane's SQLite file and key start empty, as on a first `npm start`.
    // The mock origin is on loopback, which the outbound host policy refuses unless allowed.
    env: {
      ...inherited,
      PORT: String(port),
      GATEWAY_API_KEYS: apiKey,
      GATEWAY_LOG_LEVEL: 'info',
      GATEWAY_DATA_DIR: options.dataDir ?? mkdtempSync(join(tmpdir(), 'gw-bench-')),
      GATEWAY_BOOTSTRAP_KEY: `${apiKey}-bootstrap`,
      GATEWAY_ALLOW_HOSTS: '127.0.0.1',
    },
    stdio: ['ignore', out, 'inherit'],
  });
  closeSync(out);
  track(child, name);
  await forkChild('reaper', 'reaper.ts', [String(child.pid)]);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`gateway exited with code ${child.exitCode} before answering GET /health`);
    const ok = await fetch(`${url}/health`).then(
      async (r) => (await r.arrayBuffer(), r.status === 200),
      () => false,
    );
    if (ok) {
      if (targetCores !== null) pin(child.pid!, targetCores);
      return { name, url, pid: child.pid! };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('gateway did not answer GET /health with 200 within 15 s');
}
