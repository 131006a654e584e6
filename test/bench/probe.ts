import { Pool } from 'undici';

export interface ProbeTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * Sequential c=1 latency in µs (autocannon only has whole ms), one keep-alive
 * connection per target. Targets take turns in rounds, so a noisy spell on the
 * shared machine lands on all of them rather than skewing one.
 */
export async function probe(targets: ProbeTarget[], body: string, n: number, warmup = 200, rounds = 10): Promise<Map<string, number>> {
  const pools = new Map(targets.map((t) => [t.name, new Pool(t.url, { connections: 1, pipelining: 1 })]));
  const samples = new Map(targets.map((t) => [t.name, [] as number[]]));
  const once = async (t: ProbeTarget, keep: boolean) => {
    const start = process.hrtime.bigint();
    const res = await pools.get(t.name)!.request({ method: 'POST', path: '/v1/chat/completions', headers: t.headers, body });
    await res.body.text();
    const us = Number(process.hrtime.bigint() - start) / 1000;
    if (res.statusCode !== 200) throw new Error(`probe: ${t.name} answered ${res.statusCode}`);
    if (keep) samples.get(t.name)!.push(us);
  };
  try {
    for (const t of targets) for (let i = 0; i < warmup; i++) await once(t, false);
    for (let r = 0; r < rounds; r++) {
      for (const t of targets) for (let i = 0; i < Math.ceil(n / rounds); i++) await once(t, true);
    }
  } finally {
    await Promise.all([...pools.values()].map((p) => p.close()));
  }
  return new Map([...samples].map(([name, us]) => [name, median(us)]));
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
