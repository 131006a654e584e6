import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
}

export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
}

/**
 * A 1 s warm-up (JIT, keep-alive pools filled), then the measured run. With `pid`, the process's own
 * CPU time over the measured run, per answered request (`cpuUs`): the steadiest figure on a shared machine.
 */
export async function measure(spec: LoadSpec, pid?: number): Promise<LoadResult & { cpuUs: number }> {
  const opts = { url: spec.url, method: 'POST', headers: spec.headers, body: spec.body, connections: spec.connections, timeout: 10 };
  await autocannon({ ...opts, duration: 1 });
  const before = pid === undefined ? NaN : cpuTicks(pid);
  const r = await autocannon({ ...opts, duration: spec.duration });
  const after = pid === undefined ? NaN : cpuTicks(pid);
  const requests = r['2xx'] + r.non2xx;
  return {
    rps: r.requests.mean,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    cpuUs: ((after - before) * 10_000) / requests,
  };
}

/** User + system CPU time of a process (all its threads), in clock ticks of 10 ms; NaN off Linux. */
export function cpuTicks(pid: number): number {
  return statTicks(`/proc/${pid}/stat`);
}

/** User + system CPU time from a `/proc` stat file (a process's, or one thread's under `task/`), in ticks; NaN when unreadable. */
export function statTicks(path: string): number {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/** VmRSS of a process in MB, from /proc (Linux only; NaN elsewhere). */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Samples a child's RSS every 200 ms while `work` runs; returns the work's result and the max seen. */
export async function withRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; maxMb: number }> {
  let maxMb = rssMb(pid);
  const timer = setInterval(() => (maxMb = Math.max(maxMb, rssMb(pid))), 200);
  try {
    return { result: await work(), maxMb: Math.max(maxMb, rssMb(pid)) };
  } finally {
    clearInterval(timer);
  }
}
