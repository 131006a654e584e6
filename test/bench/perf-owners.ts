import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Where a process's CPU goes, from Linux `perf`: samples of every thread, each charged to one owner.
 * A sample whose innermost frame is in the kernel is socket I/O and scheduling; one in V8's garbage
 * collector is GC; any other goes to the innermost frame that names a file: a module of the gateway
 * (`dist/core/…`, `dist/plugins/<name>/…`), a package, or one of node's own (http, streams, events). The
 * gateway is started with `--perf-basic-prof`, so its JIT frames carry their function and file.
 */

/** One owner's share of a thread group's samples. */
export interface OwnerShare {
  owner: string;
  samples: number;
}

export interface PerfOwners {
  /** Samples of the main thread (the event loop), and of all the other threads. */
  main: OwnerShare[];
  others: OwnerShare[];
  mainSamples: number;
  otherSamples: number;
}

/** True when `perf` can record here (installed, and allowed to watch another process). */
export function perfAvailable(): boolean {
  const r = spawnSync('perf', ['record', '-o', '/dev/null', '-q', '--', 'true'], { stdio: 'ignore' });
  return r.status === 0;
}

/** Records `pid` (all its threads) for `seconds`, with call chains; resolves with the owners of its samples. */
export async function recordOwners(pid: number, seconds: number): Promise<PerfOwners> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-perf-'));
  const data = join(dir, 'perf.data');
  try {
    await new Promise<void>((resolve, reject) => {
      const p = spawn('perf', ['record', '-q', '-F', '999', '-g', '-p', String(pid), '-o', data, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
      p.once('error', reject);
      p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perf record exited with ${code}`))));
    });
    const script = spawnSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym,dso'], { maxBuffer: 1 << 30, encoding: 'utf8' });
    if (script.status !== 0) throw new Error(`perf script exited with ${script.status}`);
    return owners(script.stdout, pid);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Names for node's internal modules where the file's own name says little (`_http_outgoing` is http). */
const NODE_PARTS: Record<string, string> = { process: 'ticks and promises', per_context: 'worker messages', stream: 'streams', stream_base_commons: 'streams' };

const GC = /Scavenger|MarkCompact|Heap::|Sweeper|Marking|Evacuat|GCTracer|ConcurrentMarking|MinorMC/;
const KERNEL = /\[kernel\.kallsyms\]|^\s*ffffffff/;

/** The owner of one sample from its frames, innermost first (each `address symbol (dso)`). */
export function ownerOf(frames: string[]): string {
  const leaf = frames[0] ?? '';
  if (KERNEL.test(leaf)) return 'kernel: sockets, scheduling';
  if (GC.test(leaf)) return 'V8 garbage collector';
  if (leaf.includes('better_sqlite3.node')) return 'SQLite (better-sqlite3)';
  for (const f of frames) {
    const dist = /\/dist\/(core|sdk|server|plugins\/[\w-]+)\//.exec(f);
    if (dist !== null) return dist[1]!;
    const pkg = /node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//.exec(f);
    if (pkg !== null) return pkg[1]!;
    const internal = /\snode:(?:internal\/)?(\w+)/.exec(f);
    if (internal !== null) return `node: ${NODE_PARTS[internal[1]!] ?? internal[1]!.replace(/^_/, '').replace(/_.*$/, '')}`;
  }
  return 'V8 runtime and builtins (no JS caller)';
}

/** Parses `perf script` output (tid, then frames) into owners, split by main thread and the rest. */
export function owners(text: string, pid: number): PerfOwners {
  const main = new Map<string, number>();
  const others = new Map<string, number>();
  let mainSamples = 0;
  let otherSamples = 0;
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.trim() !== '');
    if (lines.length < 2) continue;
    const tid = Number.parseInt(lines[0]!.trim(), 10);
    const owner = ownerOf(lines.slice(1));
    const into = tid === pid ? main : others;
    into.set(owner, (into.get(owner) ?? 0) + 1);
    if (tid === pid) mainSamples++;
    else otherSamples++;
  }
  const sorted = (m: Map<string, number>) => [...m].map(([owner, samples]) => ({ owner, samples })).sort((a, b) => b.samples - a.samples);
  return { main: sorted(main), others: sorted(others), mainSamples, otherSamples };
}
