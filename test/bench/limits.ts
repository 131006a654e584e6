import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forkChild } from './children.js';
import { measure, type LoadResult } from './load.js';

/** Autocannon runs this case adds to the bench: two gateways at two concurrencies. */
export const LIMITS_RUNS = 4;
const CONNECTIONS = [1, 64] as const;

export interface LimitsRow extends LoadResult {
  case: 'policies' | 'none';
  connections: number;
  cpuUs: number;
}

/**
 * One request policy and one token policy active (memory store) against none: the same gateway built
 * from plugins (test/bench/limits-gateway.ts, through tsx), non-stream, in front of the bench's mock.
 * Each request with policies is checked (two counters), reserves its token estimate and settles it
 * to the answer's usage once logged.
 */
export async function limitsBench(mockUrl: string, duration: number, body: string): Promise<{ rows: LimitsRow[]; table: string }> {
  const rows: LimitsRow[] = [];
  console.log('bench: limits, one request and one token policy (memory store) against none, non-stream');
  for (const which of ['none', 'policies'] as const) {
    const logFile = join(tmpdir(), `bench-limits-${which}-${process.pid}.log`);
    process.on('exit', () => rmSync(logFile, { force: true }));
    const gw = await forkChild(`limits-${which}`, 'limits-gateway.ts', [mockUrl, logFile, which]);
    const headers = { 'content-type': 'application/json' };
    const smoke = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body });
    const text = await smoke.text();
    const limited = smoke.headers.get('x-ratelimit-limit-tokens') !== null;
    if (smoke.status !== 200 || limited !== (which === 'policies')) throw new Error(`limits smoke request (${which}) failed: ${smoke.status} ${text.slice(0, 300)}`);
    for (const connections of CONNECTIONS) {
      const result = await measure({ url: `${gw.url}/v1/chat/completions`, headers, body, connections, duration }, gw.pid);
      rows.push({ case: which, connections, ...result });
      console.log(`  limits ${which.padEnd(8)} c=${String(connections).padEnd(3)} ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  ${result.cpuUs.toFixed(0)} µs CPU/req`);
      if (result.errors > 0 || result.non2xx > 0) console.warn(`  WARNING: limits ${which} c=${connections}: ${result.errors} errors/timeouts, ${result.non2xx} non-2xx`);
    }
  }
  return { rows, table: limitsTable(rows) };
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Policies against none per concurrency: throughput, its ratio, latency and CPU per request. */
export function limitsTable(rows: readonly LimitsRow[]): string {
  const lines = ['| connections | no policy req/s | 2 policies req/s | policies/none | p50 / p99 ms (none, policies) | CPU µs per request (none, policies) |', '|--:|--:|--:|--:|--:|--:|'];
  for (const c of CONNECTIONS) {
    const none = rows.find((r) => r.case === 'none' && r.connections === c)!;
    const on = rows.find((r) => r.case === 'policies' && r.connections === c)!;
    lines.push(`| ${c} | ${fmt(none.rps)} | ${fmt(on.rps)} | ${fmt(on.rps / none.rps, 2)} | ${none.p50} / ${none.p99}, ${on.p50} / ${on.p99} | ${fmt(none.cpuUs)}, ${fmt(on.cpuUs)} |`);
  }
  return lines.join('\n');
}
