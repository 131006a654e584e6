import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { forkChild, pinTargets, startGateway, stopAll } from './children.js';
import { measure, statTicks } from './load.js';

/*
 * Where a gateway's CPU goes, thread by thread: the built gateway (default config, or the default less the plugins
 * BENCH_DROP names) under one load, and each of its threads' CPU per request from /proc/<pid>/task (the main thread;
 * the others, the log writer and V8's helpers, by thread id, busiest first), round by round, then its peak RSS. Not
 * pinned: each thread runs where the scheduler puts it.
 * `node --import tsx test/bench/threads.ts` (after `npm run build`); BENCH_MODE (non-stream, stream), BENCH_CONNECTIONS
 * (64), BENCH_DURATION (8 s), BENCH_ROUNDS (2), BENCH_DROP (`log-store,log-api`), BENCH_NODE_FLAGS (`--trace-gc`), and
 * BENCH_PROFILE=gateway for a CPU profile of every thread in /tmp/prof.
 */

const API_KEY = 'bench-key-0123456789abcdef';

/** CPU ticks (10 ms) of each thread of `pid` so far, by thread id. */
function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const ticks = statTicks(`/proc/${pid}/task/${tid}/stat`);
    // NaN: the thread ended meanwhile.
    if (!Number.isNaN(ticks)) out.set(tid === String(pid) ? 'main' : `thread ${tid}`, ticks);
  }
  return out;
}

const mode = process.env.BENCH_MODE === 'stream' ? 'stream' : 'non-stream';
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const duration = Number(process.env.BENCH_DURATION ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const drop = (process.env.BENCH_DROP ?? '').split(',').filter((name) => name !== '');
const dir = mkdtempSync(join(tmpdir(), 'bench-threads-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'gateway.json');
writeFileSync(config, JSON.stringify({ ...DEFAULT_CONFIG, plugins: DEFAULT_CONFIG.plugins.filter((p) => !drop.includes(p.name)) }));

const mock = await forkChild('mock', 'mock-server.ts');
pinTargets(null);
const gateway = await startGateway(API_KEY, join(dir, 'stdout.log'), { config, nodeFlags: (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '') });
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };
const spec = {
  url: `${gateway.url}/v1/chat/completions`,
  headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', 'x-gateway-api-key': API_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${mock.url}/v1` },
  body: JSON.stringify(mode === 'stream' ? { ...chat, stream: true } : chat),
  connections,
  duration,
};
console.log(`threads: ${mode} c=${connections}, ${duration} s a round, default config${drop.length === 0 ? '' : ` less ${drop.join(', ')}`}; CPU µs per request`);
for (let round = 1; round <= rounds; round++) {
  const before = threadTicks(gateway.pid);
  const r = await measure(spec, gateway.pid);
  const per = [...threadTicks(gateway.pid)]
    .map(([thread, ticks]) => [thread, ((ticks - (before.get(thread) ?? 0)) * 10_000) / r.requests] as const)
    .filter(([, us]) => us >= 0.5)
    .sort((a, b) => (a[0] === 'main' ? -1 : b[0] === 'main' ? 1 : b[1] - a[1]));
  console.log(`round ${round}: ${r.rps.toFixed(0)} req/s, process ${r.cpuUs.toFixed(1)}; ${per.map(([thread, us]) => `${thread} ${us.toFixed(1)}`).join(', ')}`);
}
const peak = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${gateway.pid}/status`, 'utf8'));
console.log(`peak RSS: ${peak === null ? 'n/a' : (Number(peak[1]) / 1024).toFixed(1)} MB`);
await stopAll();
process.exit(0);
