import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forkChild, pinTargets, startGateway, stopAll } from './children.js';
import { rssMb } from './load.js';
import { pin, pinNote, pinPlan } from './pin.js';

/*
 * `npm run soak`: the built gateway (default config, every request logged) under steady mixed load for
 * SOAK_MINUTES (default 30), its RSS sampled every 5 s. After the warm-up (SOAK_WARMUP_MINUTES, default 3: pools
 * filled, JIT settled, the log's first segments written) a least-squares line through the samples gives the
 * slope in MB a minute; the target is under 0.2 (docs/performance.md). The load: non-stream and stream chat
 * completions (with and without usage asked), and requests refused at auth, 16 connections each.
 */

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const WARMUP = Math.min(Number(process.env.SOAK_WARMUP_MINUTES ?? 3), MINUTES / 2);
const SAMPLE_MS = 5000;
const API_KEY = 'soak-key-0000001';
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };

/** Least-squares slope of y over x. */
export function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

async function main(): Promise<void> {
  const plan = pinPlan();
  if (plan !== null) pin(process.pid, plan.load);
  const mock = await forkChild('mock', 'mock-server.ts');
  pinTargets(plan?.target ?? null);
  const dir = mkdtempSync(join(tmpdir(), 'soak-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const gateway = await startGateway(API_KEY, join(dir, 'stdout.log'));
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-soak', 'x-gateway-api-key': API_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${mock.url}/v1` };
  const bodies = [
    JSON.stringify(CHAT),
    JSON.stringify({ ...CHAT, stream: true }),
    JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }),
    JSON.stringify({ ...CHAT, metadata: { team: 'soak' } }),
  ];
  const url = `${gateway.url}/v1/chat/completions`;
  console.log(`soak: ${MINUTES} min, warm-up ${WARMUP} min, RSS every ${SAMPLE_MS / 1000} s; ${pinNote(plan)}`);
  const started = Date.now();
  const until = started + MINUTES * 60_000;
  const samples: Array<[number, number]> = [];
  const timer = setInterval(() => {
    const minutes = (Date.now() - started) / 60_000;
    const mb = rssMb(gateway.pid);
    samples.push([minutes, mb]);
    if (samples.length % 12 === 0) console.log(`  ${minutes.toFixed(1)} min  RSS ${mb.toFixed(1)} MB`);
  }, SAMPLE_MS);
  let requests = 0;
  let failures = 0;
  // Runs of 10 s, round the bodies, until the time is up; a refused request (no key) every run too.
  for (let i = 0; Date.now() < until; i++) {
    const seconds = Math.max(1, Math.min(10, Math.round((until - Date.now()) / 1000)));
    const [ok, refused] = await Promise.all([
      autocannon({ url, method: 'POST', headers, body: bodies[i % bodies.length], connections: 16, duration: seconds }),
      autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body: bodies[0], connections: 2, duration: seconds }),
    ]);
    requests += ok['2xx'] + ok.non2xx + refused['2xx'] + refused.non2xx;
    failures += ok.non2xx + ok.errors + ok.timeouts + refused.errors + refused.timeouts;
  }
  clearInterval(timer);
  const after = samples.filter(([m]) => m >= WARMUP);
  const perMinute = slope(after);
  const first = after[0]?.[1] ?? NaN;
  const last = after[after.length - 1]?.[1] ?? NaN;
  await stopAll();
  console.log(`soak: ${requests} requests (${failures} failed), RSS ${first.toFixed(1)} MB after warm-up, ${last.toFixed(1)} MB at the end, max ${Math.max(...samples.map(([, mb]) => mb)).toFixed(1)} MB`);
  console.log(`soak: RSS slope after warm-up ${perMinute.toFixed(3)} MB/min (target < 0.2)`);
  process.exitCode = perMinute < 0.2 ? 0 : 1;
}

if (process.argv[1]?.endsWith('soak.ts')) await main();
