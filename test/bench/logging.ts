import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import autocannon from 'autocannon';
import type { LoadResult } from './load.js';

/**
 * The cost of logging: the same gateway (trace, config, validation, openai; no pino request line) with
 * logging off, with the SQLite log store (default options: truncated bodies, batches of 100 or every second),
 * and with the log store plus the Prometheus metrics, each in its own process in front of the same mock.
 * The three run side by side and take turns, round after round, so a noisy spell on the shared machine
 * lands on all of them; each figure is the median of its rounds. Besides req/s, the gateway process's own
 * CPU time per request (from /proc) is reported: it is what logging costs, and it is far less noisy.
 * Run by `npm run bench` (run.ts), or alone: `node --import tsx test/bench/logging.ts` (BENCH_DURATION: seconds
 * per round and scenario; BENCH_LOG_OPTIONS / BENCH_METRICS_OPTIONS: JSON options for the log store and metrics).
 */

const require = createRequire(import.meta.url);
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const VARIANTS = ['off', 'sqlite', 'sqlite+metrics'] as const;
const SCENARIOS = [
  { mode: 'non-stream', connections: 64 },
  { mode: 'stream', connections: 16 },
] as const;
const ROUNDS = 3;
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };
const BODIES = { 'non-stream': JSON.stringify(CHAT), stream: JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }) };
const TICK_US = 1e6 / 100; // /proc/<pid>/stat counts CPU time in clock ticks, 100 per second on Linux

export interface LoggingRow extends LoadResult {
  variant: (typeof VARIANTS)[number];
  mode: string;
  connections: number;
  /** Gateway CPU time (user + system) per answered request, in µs; NaN off Linux. */
  cpuUs: number;
}

const children = new Set<ChildProcess>();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function start(file: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(here(file), args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    child.once('message', (m: { url: string }) => resolve({ child, url: m.url }));
    child.once('exit', (code) => reject(new Error(`${file} exited before listening (${code})`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** User + system CPU time of a process, in clock ticks (NaN when /proc is not there). */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/** A 1 s warm-up, then the measured run, with the gateway's CPU time over the measured run. */
async function run(url: string, pid: number, mode: 'non-stream' | 'stream', connections: number, duration: number): Promise<LoadResult & { cpuUs: number }> {
  const opts = { url: `${url}/v1/chat/completions`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: BODIES[mode], connections, timeout: 10 };
  await autocannon({ ...opts, duration: 1 });
  const before = cpuTicks(pid);
  const r = await autocannon({ ...opts, duration });
  const answered = r['2xx'] + r.non2xx;
  return {
    rps: r.requests.mean,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: answered,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    cpuUs: answered > 0 ? ((cpuTicks(pid) - before) * TICK_US) / answered : NaN,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Runs the variants against `origin`; returns the median rows and the entries each logging variant wrote. */
export async function loggingBench(origin: string, duration: number): Promise<{ rows: LoggingRow[]; written: Map<string, number> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-logs-'));
  const written = new Map<string, number>();
  const perRun = Math.max(2, Math.round(duration / 2));
  const gateways = new Map<string, { child: ChildProcess; url: string; db: string }>();
  const samples = new Map<string, LoggingRow[]>();
  try {
    for (const variant of VARIANTS) {
      const db = join(dir, `${variant.replace('+', '-')}.db`);
      const gw = await start('logging-gateway.ts', [origin, variant, db]);
      const smoke = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODIES['non-stream'] });
      if (smoke.status !== 200) throw new Error(`logging bench: ${variant} smoke request answered ${smoke.status}: ${(await smoke.text()).slice(0, 200)}`);
      await smoke.arrayBuffer().catch(() => undefined);
      gateways.set(variant, { ...gw, db });
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const s of SCENARIOS) {
        for (const variant of VARIANTS) {
          const gw = gateways.get(variant)!;
          const result = await run(gw.url, gw.child.pid!, s.mode, s.connections, perRun);
          const key = `${variant} ${s.mode}`;
          samples.set(key, [...(samples.get(key) ?? []), { variant, ...s, ...result }]);
          console.log(
            `  logging round ${round} ${variant.padEnd(15)} ${s.mode.padEnd(10)} c=${String(s.connections).padEnd(3)} ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  ${result.cpuUs.toFixed(0)} µs CPU/request`,
          );
          if (result.errors > 0 || result.non2xx > 0) console.warn(`  WARNING: logging ${variant} ${s.mode}: ${result.errors} errors/timeouts, ${result.non2xx} non-2xx`);
        }
      }
    }
    for (const [variant, gw] of gateways) {
      await stop(gw.child);
      if (variant === 'off') continue;
      const Database = require('better-sqlite3') as typeof BetterSqlite3;
      const sqlite = new Database(gw.db, { readonly: true });
      written.set(variant, (sqlite.prepare('SELECT COUNT(*) AS c FROM gateway_logs').get() as { c: number }).c);
      sqlite.close();
    }
  } finally {
    for (const gw of gateways.values()) await stop(gw.child);
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: LoggingRow[] = [];
  for (const s of SCENARIOS) {
    for (const variant of VARIANTS) {
      const runs = samples.get(`${variant} ${s.mode}`)!;
      rows.push({
        variant,
        ...s,
        rps: median(runs.map((r) => r.rps)),
        p50: median(runs.map((r) => r.p50)),
        p99: median(runs.map((r) => r.p99)),
        requests: runs.reduce((a, r) => a + r.requests, 0),
        errors: runs.reduce((a, r) => a + r.errors, 0),
        non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
        cpuUs: median(runs.map((r) => r.cpuUs)),
      });
    }
  }
  return { rows, written };
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Throughput per variant, and each logging variant against logging off. */
export function loggingTable(rows: LoggingRow[], written: Map<string, number>): string {
  const lines = [
    '| variant | mode | connections | req/s (median) | vs off | p50 ms | p99 ms | gateway CPU µs/request | added CPU µs/request | errors / non-2xx |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const r of rows) {
    const off = rows.find((o) => o.variant === 'off' && o.mode === r.mode && o.connections === r.connections)!;
    const first = r.variant === 'off';
    lines.push(
      `| ${r.variant} | ${r.mode} | ${r.connections} | ${fmt(r.rps)} | ${first ? '—' : fmt(r.rps / off.rps, 2)} | ${r.p50} | ${r.p99} | ${fmt(r.cpuUs)} | ${first ? '—' : fmt(r.cpuUs - off.cpuUs)} | ${r.errors} / ${r.non2xx} |`,
    );
  }
  const counts = [...written].map(([v, n]) => `${v}: ${n} entries written`).join('; ');
  return `${lines.join('\n')}\n\nMedians of ${ROUNDS} interleaved rounds. Entries in the SQLite file after each logging variant's SIGTERM (warm-up and smoke requests included): ${counts}.`;
}

// Alone: its own mock, then the table.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const duration = Number(process.env.BENCH_DURATION) > 0 ? Number(process.env.BENCH_DURATION) : 5;
  const mock = await start('mock-server.ts', []);
  try {
    console.log(`bench: logging off against the SQLite log store, ${duration} s per run`);
    const { rows, written } = await loggingBench(mock.url, duration);
    console.log(`\n${loggingTable(rows, written)}`);
  } finally {
    await stop(mock.child);
  }
  process.exit(0);
}
