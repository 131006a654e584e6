import type { LoadResult } from './load.js';

/** The scenarios the log store's cost is judged on: the targets. */
export const LOG_COST_SCENARIOS = [
  { mode: 'non-stream', connections: 64 },
  { mode: 'stream', connections: 16 },
] as const;

/** Runs added per scenario: logging off, on, on, off. */
const ORDER = ['off', 'on', 'on', 'off'] as const;
export const LOG_COST_EXTRA_RUNS = ORDER.length * LOG_COST_SCENARIOS.length;

type Measured = LoadResult & { cpuUs: number };

/** The log store's cost in one scenario: req/s with logging on against off, pair by pair, and pooled. */
export interface LogCost {
  mode: string;
  connections: number;
  pairs: { on: Measured; off: Measured }[];
  /** Sum of req/s with logging on over the sum with it off, over every pair. */
  ratio: number;
  /** Mean CPU µs per request with logging on, and off. */
  cpuOn: number;
  cpuOff: number;
}

/**
 * The log store's cost, measured so that the machine's drift cancels. One pair of runs (the
 * scenario's own gateway and gateway-nolog rows, run one after the other) moves with whatever else
 * the shared machine is doing: on the bench machine, single pairs of the same build ranged from
 * 0.67 to 0.97. Two more pairs in the order off, on, on, off cancel a drift that is linear over
 * them, and pooling the three (sum over sum) weighs each run by what it measured.
 */
export async function logCost(mode: string, connections: number, first: { on: Measured; off: Measured }, run: (logging: 'on' | 'off') => Promise<Measured>): Promise<LogCost> {
  const runs: { on: Measured[]; off: Measured[] } = { on: [first.on], off: [first.off] };
  for (const logging of ORDER) runs[logging].push(await run(logging));
  const pairs = runs.on.map((on, i) => ({ on, off: runs.off[i]! }));
  const sum = (xs: Measured[], f: (m: Measured) => number) => xs.reduce((s, m) => s + f(m), 0);
  return {
    mode,
    connections,
    pairs,
    ratio: sum(runs.on, (m) => m.rps) / sum(runs.off, (m) => m.rps),
    cpuOn: sum(runs.on, (m) => m.cpuUs) / runs.on.length,
    cpuOff: sum(runs.off, (m) => m.cpuUs) / runs.off.length,
  };
}

export function logCostTable(costs: LogCost[]): string {
  const lines = [
    '| mode | connections | req/s, logging on / off, pair by pair | pooled: on/off | CPU µs per request, on / off (mean) |',
    '|---|--:|---|--:|--:|',
  ];
  for (const c of costs) {
    const pairs = c.pairs.map((p) => `${p.on.rps.toFixed(0)} / ${p.off.rps.toFixed(0)} (${(p.on.rps / p.off.rps).toFixed(2)})`).join('; ');
    lines.push(`| ${c.mode} | ${c.connections} | ${pairs} | ${c.ratio.toFixed(2)} | ${c.cpuOn.toFixed(0)} / ${c.cpuOff.toFixed(0)} |`);
  }
  return lines.join('\n');
}
