import { cpus, totalmem, type, release } from 'node:os';
import type { LoadResult } from './load.js';

export interface Row extends LoadResult {
  target: string;
  mode: 'non-stream' | 'stream';
  connections: number;
  /** The target process's CPU time per request, in µs (NaN for the mock, which is not measured). */
  cpuUs: number;
}

export interface Check {
  name: string;
  value: string;
  target: string;
  pass: boolean;
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} cores, ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${type()} ${release()}, Node ${process.version}`;
}

export function loadTable(rows: Row[]): string {
  const lines = ['| target | mode | connections | req/s | p50 ms | p99 ms | CPU µs per request | errors / non-2xx |', '|---|---|--:|--:|--:|--:|--:|--:|'];
  for (const r of rows) lines.push(`| ${r.target} | ${r.mode} | ${r.connections} | ${fmt(r.rps)} | ${r.p50} | ${r.p99} | ${fmt(r.cpuUs)} | ${r.errors} / ${r.non2xx} |`);
  return lines.join('\n');
}

export function probeTable(p50: Map<string, number>, mock: string): string {
  const base = p50.get(mock)!;
  const lines = ['| target | p50 µs | added p50 µs (vs mock direct) |', '|---|--:|--:|'];
  for (const [name, us] of p50) lines.push(`| ${name} | ${fmt(us)} | ${name === mock ? '—' : fmt(us - base)} |`);
  return lines.join('\n');
}

/** Throughput ratios for every scenario: the gateway against the bare proxy and the mock, and the gateway against itself with logging off. */
export function ratioTable(rows: Row[]): string {
  const lines = ['| mode | connections | gateway/bare | gateway/mock | gateway/gateway with logging off | CPU µs per request: gateway, logging off, bare |', '|---|--:|--:|--:|--:|--:|'];
  const find = (t: string, m: string, c: number) => rows.find((r) => r.target === t && r.mode === m && r.connections === c)!;
  for (const g of rows.filter((r) => r.target === 'gateway')) {
    const off = find('gateway-nolog', g.mode, g.connections);
    const bare = find('bare', g.mode, g.connections);
    lines.push(
      `| ${g.mode} | ${g.connections} | ${fmt(g.rps / bare.rps, 2)} | ${fmt(g.rps / find('mock', g.mode, g.connections).rps, 2)} | ${fmt(g.rps / off.rps, 2)} | ${fmt(g.cpuUs)}, ${fmt(off.cpuUs)}, ${fmt(bare.cpuUs)} |`,
    );
  }
  return lines.join('\n');
}

/** Each peer against the gateway, per scenario it served; why a mode was not measured; which peers were not installed. */
export function peerTable(rows: Row[], peers: readonly { name: string; notes: string[] }[], skipped: readonly string[], maxRss: Map<string, number>): string {
  const lines: string[] = [];
  if (peers.length > 0) {
    lines.push('| peer | mode | connections | peer req/s | gateway/peer | CPU µs per request: gateway, peer, bare | p50 / p99 ms: gateway, peer |', '|---|---|--:|--:|--:|--:|--:|');
    const find = (t: string, m: string, c: number) => rows.find((r) => r.target === t && r.mode === m && r.connections === c);
    for (const p of peers) {
      for (const r of rows.filter((x) => x.target === p.name)) {
        const g = find('gateway', r.mode, r.connections)!;
        const bare = find('bare', r.mode, r.connections)!;
        lines.push(`| ${p.name} | ${r.mode} | ${r.connections} | ${fmt(r.rps)} | ${fmt(g.rps / r.rps, 2)} | ${fmt(g.cpuUs)}, ${fmt(r.cpuUs)}, ${fmt(bare.cpuUs)} | ${g.p50} / ${g.p99}, ${r.p50} / ${r.p99} |`);
      }
    }
    lines.push('');
    for (const p of peers) {
      lines.push(`- ${p.name}: max RSS ${fmt(maxRss.get(p.name) ?? NaN, 1)} MB during its c=64 runs (gateway ${fmt(maxRss.get('gateway') ?? NaN, 1)} MB).`);
      for (const note of p.notes) lines.push(`- ${p.name}, ${note}`);
    }
  }
  for (const line of skipped) lines.push(`- ${line}`);
  return lines.join('\n');
}

export function checkTable(checks: Check[]): string {
  const lines = ['| check | value | target | result |', '|---|--:|---|---|'];
  for (const c of checks) lines.push(`| ${c.name} | ${c.value} | ${c.target} | ${c.pass ? 'PASS' : 'FAIL'} |`);
  return lines.join('\n');
}

/** One autocannon run against the cached gateway: a hit (the same request again) or a miss (forced refresh). */
export interface CacheRow extends LoadResult {
  case: 'hit' | 'miss';
  connections: number;
}

/** Hit against miss per concurrency, from autocannon. */
export function cacheLoadTable(rows: CacheRow[]): string {
  const lines = ['| connections | hit req/s | miss req/s | hit/miss | hit p50 / p99 ms | miss p50 / p99 ms | errors / non-2xx (hit, miss) |', '|--:|--:|--:|--:|--:|--:|--:|'];
  for (const c of [...new Set(rows.map((r) => r.connections))]) {
    const hit = rows.find((r) => r.case === 'hit' && r.connections === c)!;
    const miss = rows.find((r) => r.case === 'miss' && r.connections === c)!;
    lines.push(
      `| ${c} | ${fmt(hit.rps)} | ${fmt(miss.rps)} | ${fmt(hit.rps / miss.rps, 2)} | ${hit.p50} / ${hit.p99} | ${miss.p50} / ${miss.p99} | ${hit.errors} / ${hit.non2xx}, ${miss.errors} / ${miss.non2xx} |`,
    );
  }
  return lines.join('\n');
}

/** Sequential c=1 latency of a hit and a miss, with the mock's own p50 for reference. */
export function cacheProbeTable(p50: Map<string, number>, mockP50: number): string {
  const lines = ['| case | p50 µs | vs mock direct µs |', '|---|--:|--:|'];
  for (const [name, us] of p50) lines.push(`| ${name} | ${fmt(us)} | ${fmt(us - mockP50)} |`);
  return lines.join('\n');
}
