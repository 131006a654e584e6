import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

/*
 * Where the bench's processes run. On this 2-core virtual machine a proxy's speed depended on which core the
 * scheduler put it on: measured one process at a time with `taskset`, the bare pass-through took 80–82 µs of
 * CPU per request on core 0 and 148–162 µs on core 1, the gateway 189–196 µs on core 0 and 429–520 µs on
 * core 1 (later the same day both cores ran the floor alike: the host's doing, and it comes and goes). Left
 * to the scheduler, fresh processes of one build landed anywhere between (241–319 µs) and kept their core,
 * so their speed, for their whole life: the "slow twin" (docs/performance.md, "Two speeds of one build").
 * So every process under test runs on one core and the load (autocannon in this process, the mock) on the
 * other: the systems compared share that core's fate.
 *
 * BENCH_PIN=`<cores under test>:<cores for the load>` (taskset lists, default `0:1`), or `off`.
 */

export interface PinPlan {
  /** taskset list for the processes under test (bare, gateways, peers). */
  target: string;
  /** taskset list for this process (autocannon) and the mock. */
  load: string;
}

function tasksetWorks(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The plan from BENCH_PIN, or null (a single core, no taskset, or `off`): then the scheduler places every process. */
export function pinPlan(): PinPlan | null {
  const raw = process.env.BENCH_PIN ?? '0:1';
  if (raw === 'off' || cpus().length < 2 || !tasksetWorks()) return null;
  const [target, load] = raw.split(':');
  if (!target || !load) throw new Error(`BENCH_PIN must be <cores under test>:<cores for the load> or off, got "${raw}"`);
  return { target, load };
}

/** Puts every thread of `pid` on `cores` (threads started later inherit it from the thread that starts them). */
export function pin(pid: number, cores: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
}

/** A line for the report: where the processes ran. */
export function pinNote(plan: PinPlan | null): string {
  return plan === null
    ? 'processes placed by the scheduler (BENCH_PIN=off, one core, or no taskset)'
    : `processes under test pinned to core ${plan.target}, autocannon and the mock to core ${plan.load} (BENCH_PIN)`;
}
