import { cpus, totalmem, type, release } from 'node:os';
import type { LoadResult } from './load.js';

export interface Row extends LoadResult {
  target: string;
  mode: 'non-stream' | 'stream';
  connections: number;
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
  const lines = ['| target | mode | connections | req/s | p50 ms | p99 ms | errors / non-2xx |', '|---|---|--:|--:|--:|--:|--:|'];
  for (const r of rows) lines.push(`| ${r.target} | ${r.mode} | ${r.connections} | ${fmt(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} / ${r.non2xx} |`);
  return lines.join('\n');
}

export function probeTable(p50: Map<string, number>, mock: string): string {
  const base = p50.get(mock)!;
  const lines = ['| target | p50 µs | added p50 µs (vs mock direct) |', '|---|--:|--:|'];
  for (const [name, us] of p50) lines.push(`| ${name} | ${fmt(us)} | ${name === mock ? '—' : fmt(us - base)} |`);
  return lines.join('\n');
}

/** gateway/bare and gateway/mock throughput for every scenario. */
export function ratioTable(rows: Row[]): string {
  const lines = ['| mode | connections | gateway/bare | gateway/mock |', '|---|--:|--:|--:|'];
  const find = (t: string, m: string, c: number) => rows.find((r) => r.target === t && r.mode === m && r.connections === c)!;
  for (const g of rows.filter((r) => r.target === 'gateway')) {
    lines.push(`| ${g.mode} | ${g.connections} | ${fmt(g.rps / find('bare', g.mode, g.connections).rps, 2)} | ${fmt(g.rps / find('mock', g.mode, g.connections).rps, 2)} |`);
  }
  return lines.join('\n');
}

export function checkTable(checks: Check[]): string {
  const lines = ['| check | value | target | result |', '|---|--:|---|---|'];
  for (const c of checks) lines.push(`| ${c.name} | ${c.value} | ${c.target} | ${c.pass ? 'PASS' : 'FAIL'} |`);
  return lines.join('\n');
}
