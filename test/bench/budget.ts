import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { forkChild, startGateway, stopAll, type Child } from './children.js';
import { measure } from './load.js';
import { perfAvailable, recordOwners, type OwnerShare, type PerfOwners } from './perf-owners.js';
import { machine } from './report.js';

/*
 * `npm run bench:budget`: where a request's CPU goes. The bare pass-through and four builds of the gateway,
 * each adding plugins to the one before (the least that serves a chat request, then every request-path
 * feature, then the log store, then the default with metrics, OpenTelemetry and the request log), measured
 * side by side in interleaved rounds; then, where Linux `perf` can record, the default gateway's samples
 * charged to their owners (perf-owners.ts). Writes docs/cost-budget.md.
 */

const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const API_KEY = 'budget-key-000001';
const DOC = fileURLToPath(new URL('../../docs/cost-budget.md', import.meta.url));
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };
const SCENARIOS = [
  { mode: 'non-stream', connections: 64, body: JSON.stringify(CHAT) },
  { mode: 'stream', connections: 16, body: JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }) },
] as const;

/** The plugins of the smallest build that answers a chat request named by headers (and `/health`, which the bench waits for). */
const CORE = ['health', 'auth-static', 'sqlite', 'control-plane', 'config', 'provider-registry', 'provider-headers', 'strategy-single', 'openai', 'proxy'];
const LOG_STORE = ['log-store', 'log-api'];
const OBSERVE = ['metrics', 'otel', 'request-log'];

/** Each build and what it adds to the one before. */
const BUILDS = [
  { name: 'core', adds: 'auth, config, one provider, proxy', keep: (n: string) => CORE.includes(n) },
  { name: 'features', adds: 'every other request-path plugin: trace, validation, guardrails, limits, cache, routing, strategies, retry, breaker, timeout, the other providers and doors, MCP, A2A, dashboard…', keep: (n: string) => !LOG_STORE.includes(n) && !OBSERVE.includes(n) },
  { name: 'log-store', adds: 'the log store and its routes (every request stored)', keep: (n: string) => !OBSERVE.includes(n) },
  { name: 'default', adds: 'metrics, OpenTelemetry (no exporter set), the request log', keep: () => true },
] as const;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Target extends Child {
  headers: Record<string, string>;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-budget-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const mock = await forkChild('mock', 'mock-server.ts');
  const plain = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };
  const viaGateway = { ...plain, 'x-gateway-api-key': API_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${mock.url}/v1` };
  const targets: Target[] = [{ ...(await forkChild('bare', 'bare-proxy.mjs', [mock.url])), headers: plain }];
  for (const b of BUILDS) {
    const config = join(dir, `${b.name}.json`);
    writeFileSync(config, JSON.stringify({ ...DEFAULT_CONFIG, plugins: DEFAULT_CONFIG.plugins.filter((p) => b.keep(p.name)) }));
    targets.push({ ...(await startGateway(API_KEY, join(dir, `${b.name}.log`), { name: b.name, config })), headers: viaGateway });
  }

  const sections: string[] = [];
  for (const s of SCENARIOS) {
    const runs = new Map<string, { rps: number[]; cpu: number[] }>(targets.map((t) => [t.name, { rps: [], cpu: [] }]));
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating order, so a drift of the shared machine over a round lands on every target alike.
      for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
        const r = await measure({ url: `${t.url}/v1/chat/completions`, headers: t.headers, body: s.body, connections: s.connections, duration: DURATION }, t.pid);
        if (r.errors > 0 || r.non2xx > 0) throw new Error(`${t.name}, ${s.mode}: ${r.errors} errors, ${r.non2xx} non-2xx answers`);
        runs.get(t.name)!.rps.push(r.rps);
        runs.get(t.name)!.cpu.push(r.cpuUs);
      }
    }
    process.stderr.write(`budget: ${s.mode} c=${s.connections} measured\n`);
    sections.push(ladderTable(s.mode, s.connections, runs));
  }

  let perfSection: string;
  if (!perfAvailable()) {
    perfSection = 'Not measured: Linux `perf` is not installed here, or may not record another process (`perf_event_paranoid`).';
  } else {
    // Its own process, started with JIT frame names for perf; the ladder's default gateway ran without them.
    const profiled = await startGateway(API_KEY, join(dir, 'perf.log'), { name: 'default-perf', nodeFlags: ['--perf-basic-prof'] });
    const spec = { url: `${profiled.url}/v1/chat/completions`, headers: viaGateway, body: SCENARIOS[0].body, connections: 64, duration: DURATION + 2 };
    await measure({ ...spec, duration: DURATION });
    const [owners, run] = await Promise.all([recordOwners(profiled.pid, DURATION), measure(spec, profiled.pid)]);
    perfSection = ownersSection(owners, run.cpuUs);
    // The symbol map node writes for perf (always in /tmp), left there otherwise.
    process.on('exit', () => rmSync(`/tmp/perf-${profiled.pid}.map`, { force: true }));
  }
  await stopAll();
  writeFileSync(DOC, doc(sections, perfSection));
  process.stdout.write(`budget: wrote ${DOC}\n`);
}

/**
 * One scenario's ladder. The machine's speed drifts by more than a step costs between rounds, so each
 * target is compared with the bare proxy of its own round (the rounds alternate their order): its figures
 * are the median over rounds of its ratio to that round's bare run, shown in µs as that ratio times the
 * bare proxy's median. A step's cost is the median over rounds of the difference of the two ratios, with
 * its least and most: on a shared machine a single step is known to tens of µs at best.
 */
function ladderTable(mode: string, connections: number, runs: Map<string, { rps: number[]; cpu: number[] }>): string {
  const bare = runs.get('bare')!;
  const bareCpu = median(bare.cpu);
  const cpuRatio = (name: string) => runs.get(name)!.cpu.map((c, r) => c / bare.cpu[r]!);
  const rpsRatio = (name: string) => median(runs.get(name)!.rps.map((x, r) => x / bare.rps[r]!));
  const us = (name: string) => median(cpuRatio(name)) * bareCpu;
  const lines = [
    `### ${mode}, c=${connections}`,
    '',
    '| target | adds | req/s ×bare | CPU µs per request | added by this step: median (least to most over the rounds) | req/s, round by round |',
    '|---|---|--:|--:|--:|---|',
    `| bare | — | 1.00 | ${bareCpu.toFixed(0)} | — | ${bare.rps.map((x) => x.toFixed(0)).join(', ')} |`,
  ];
  let before = cpuRatio('bare');
  for (const b of BUILDS) {
    const ratios = cpuRatio(b.name);
    const steps = ratios.map((x, r) => (x - before[r]!) * bareCpu);
    const range = `${median(steps).toFixed(0)} (${Math.min(...steps).toFixed(0)} to ${Math.max(...steps).toFixed(0)})`;
    lines.push(`| ${b.name} | ${b.adds} | ${rpsRatio(b.name).toFixed(2)} | ${us(b.name).toFixed(0)} | ${range} | ${runs.get(b.name)!.rps.map((x) => x.toFixed(0)).join(', ')} |`);
    before = ratios;
  }
  // What a gateway may cost to reach 0.7× the floor here: the machine's other work per request (autocannon, the mock)
  // is what the bare run's two saturated cores did per request less the bare proxy's own share.
  const perRequest = (2 * 1e6) / median(bare.rps);
  const rest = perRequest - bareCpu;
  const allowed = perRequest / 0.7 - rest;
  const within = BUILDS.filter((b) => us(b.name) <= allowed).map((b) => b.name);
  const reaching = BUILDS.filter((b) => rpsRatio(b.name) >= 0.7).map((b) => b.name);
  const full = us('default');
  const part = (from: string, to: string) => `${((100 * (us(to) - us(from))) / full).toFixed(0)}%`;
  lines.push(
    '',
    `Two cores spent ${perRequest.toFixed(0)} µs per request in the bare runs (median), ${bareCpu.toFixed(0)} of them the proxy's; for 0.7× its req/s ` +
      `a gateway may spend about ${allowed.toFixed(0)} µs (if the cores stay saturated and the rest costs the same): ` +
      `${within.length === 0 ? 'no build does' : `within it: ${within.join(', ')}`}. Measured, ` +
      `${reaching.length === 0 ? `no build reaches 0.7× (the smallest, core, ${rpsRatio('core').toFixed(2)}×)` : `${reaching.join(', ')} reach 0.7×`}. Of the default's ${full.toFixed(0)} µs, ` +
      `${part('bare', 'core')} is the core build's over the bare proxy, ${part('core', 'features')} the other request-path plugins, ` +
      `${part('features', 'log-store')} the log store, ${part('log-store', 'default')} metrics, OpenTelemetry and the request log.`,
  );
  return lines.join('\n');
}

function ownersSection(o: PerfOwners, cpuUs: number): string {
  const total = o.mainSamples + o.otherSamples;
  const table = (rows: OwnerShare[], of: number) => {
    const lines = ['| owner | share of all samples | ≈ µs per request |', '|---|--:|--:|'];
    for (const r of rows.slice(0, 18)) lines.push(`| ${r.owner} | ${((100 * r.samples) / total).toFixed(1)}% | ${((cpuUs * r.samples) / total).toFixed(1)} |`);
    const shown = rows.slice(0, 18).reduce((s, r) => s + r.samples, 0);
    if (shown < of) lines.push(`| the rest | ${((100 * (of - shown)) / total).toFixed(1)}% | ${((cpuUs * (of - shown)) / total).toFixed(1)} |`);
    return lines.join('\n');
  };
  return [
    `The default gateway at non-stream c=64: ${total} samples, ${cpuUs.toFixed(0)} µs of CPU per request over the recorded run. µs per request is each owner's share of that.`,
    '',
    `#### Main thread (the event loop): ${((100 * o.mainSamples) / total).toFixed(1)}%`,
    '',
    table(o.main, o.mainSamples),
    '',
    `#### Other threads (the log writer, V8's GC helpers, libuv): ${((100 * o.otherSamples) / total).toFixed(1)}%`,
    '',
    table(o.others, o.otherSamples),
  ].join('\n');
}

function doc(ladder: string[], perf: string): string {
  return `# Cost budget: where a request's CPU goes

Written by \`npm run bench:budget\` (test/bench/budget.ts). The bare pass-through ([performance.md](performance.md),
"The floor") and four builds of the gateway, each adding plugins to the one before, run side by side against the
same mock in ${ROUNDS} interleaved rounds of ${DURATION} s. The machine's speed drifts between rounds by more than a step costs,
so each build is measured against the bare proxy of its own round: the median over rounds of that ratio. CPU per request is the
process's own (all its threads, from \`/proc\`). Then, where Linux \`perf\` can record, the default gateway's CPU
samples are charged to their owners (test/bench/perf-owners.ts): a sample in the kernel is socket I/O and scheduling,
one in V8's collector is GC, any other goes to the innermost frame that names a file. \`BENCH_DURATION\` sets the seconds
per run (default 3), \`BENCH_ROUNDS\` the rounds (default 7).

- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} (UTC)
- Machine: ${machine()}

> One run on a shared 2-core machine where autocannon, the mock and the process under test share the cores:
> compare within the run, not across runs. Even within it a single step is known to tens of µs (the range
> beside each): the ladder shows which parts are large, not small differences between them.

## The ladder

${ladder.join('\n\n')}

## Owners of the default gateway's CPU

${perf}
`;
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  void stopAll().then(() => process.exit(1));
});
