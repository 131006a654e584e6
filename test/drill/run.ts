/**
 * The fault drill (`npm run drill`; docs/operations.md, "The fault drill"): three gateway replicas on loopback
 * sharing a Redis Cluster of three primaries and three replicas (redis-server processes started here) and
 * PostgreSQL (DATABASE_URL, a schema of its own), under steady load against a loopback mock provider. One
 * fault per phase: a Redis primary killed, a gateway replica restarted (taken out of rotation through /ready,
 * drained, started again), PostgreSQL's connections dropped. Per phase it reports the requests sent and
 * failed (5xx or no answer), how far a limit was exceeded (each phase has its own requests-per-hour policy,
 * sent well past it), log entries lost (answered requests with no entry) and the time to recover (from the
 * fault to the last failed or slow request). Exits 1 when a phase failed a request beyond those the fault
 * took in flight, exceeded a limit or lost a log entry.
 *
 * Knobs (environment): DRILL_SECONDS (per phase, default 8), DRILL_CONCURRENCY (default 16), DRILL_LIMIT
 * (the policy per phase, default 300), DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * DRILL_UPGRADE_FROM (a git ref, or `previous` for the release before this one: the replicas start on that version, checked out beside this one, and the
 * replica phase becomes a rolling upgrade to this one, each replica drained and replaced in turn).
 * Loopback only; needs redis-server, redis-cli and PostgreSQL.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { checkoutRelease, PREVIOUS_RELEASE } from '../helpers/previous-release.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { redisBinariesPresent, startRedisCluster } from '../helpers/redis-topology.js';
import { DATABASE_URL, reachable, uniquePrefix, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI } from '../mocks/openai-upstream.js';

const SECONDS = Number(process.env.DRILL_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.DRILL_CONCURRENCY ?? 16);
const LIMIT = Number(process.env.DRILL_LIMIT ?? 300);
const ADMIN = 'drill-bootstrap-admin-key-00001';
/** A request slower than this counts as not yet recovered. */
const SLOW_MS = 1000;

interface Outcome {
  phase: string;
  status: number; // 0: no answer
  at: number; // ms since the phase started, when it was answered
  ms: number;
  traceId: string;
}

async function main(): Promise<void> {
  if (!redisBinariesPresent()) throw new Error('the drill needs redis-server and redis-cli (apt-get install redis-server)');
  if (!(await reachable(DATABASE_URL))) throw new Error(`the drill needs PostgreSQL at ${DATABASE_URL}`);
  const started = Date.now();
  const log = (msg: string) => console.log(`[drill ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);

  const mock = await startMockOpenAI();
  const from = process.env.DRILL_UPGRADE_FROM;
  const upgrading = from !== undefined && from !== '';
  // An upgrade from a version that spoke only to one Redis node runs on one node (REDIS_URL, default the local one).
  const cluster = upgrading ? null : await startRedisCluster(3);
  const redisUrl = cluster?.url ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  log(cluster === null ? `redis: ${redisUrl} (one node)` : `redis cluster up: ${cluster.url}`);
  const schema = uniqueSchema('drill');
  const prefix = uniquePrefix('drill').replace(/[{}]/g, '');
  const dir = mkdtempSync(join(tmpdir(), 'drill-'));
  const configFile = join(dir, 'gateway.json');
  // The default config (shared stores from the environment), out of rotation for a second on SIGTERM.
  writeFileSync(configFile, JSON.stringify({ extends: 'default', readinessDrainMs: 1000 }));
  const env = { REDIS_URL: redisUrl, DATABASE_URL, GATEWAY_REDIS_PREFIX: prefix, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: 'd'.repeat(64) };
  const start = () => startProcess(['--config', configFile], env);
  // DRILL_UPGRADE_FROM: an earlier version checked out beside this one (sharing its node_modules), run through tsx;
  // `previous` is the release before this one (test/helpers/previous-release.ts).
  let previous: string | null = null;
  if (upgrading) {
    const release = checkoutRelease(from === 'previous' ? PREVIOUS_RELEASE.commit : from!);
    previous = release.dir;
    log(`previous version ${release.commit} checked out in ${previous}`);
  }
  const startPrevious = () => startProcess(['--config', configFile], env, { source: join(previous!, 'server/main.ts') });
  const replicas: Array<GatewayProcess | null> = await Promise.all(previous === null ? [start(), start(), start()] : [startPrevious(), startPrevious(), startPrevious()]);
  log(previous === null ? 'three gateway replicas up' : 'three gateway replicas up, on the previous version');

  const admin = async (method: string, path: string, body?: unknown) => {
    const live = replicas.find((r) => r !== null)!;
    const res = await fetch(`http://127.0.0.1:${live.port}/v1${path}`, { method, headers: { 'x-gateway-api-key': ADMIN, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  const phases = previous === null ? ['baseline', 'redis-primary-killed', 'gateway-replica-restarted', 'postgres-connections-dropped'] : ['baseline', 'rolling-upgrade', 'postgres-connections-dropped'];
  // Every policy before the first request: an instance reads a workspace's policies once per cache period.
  for (const phase of phases) {
    await admin('POST', '/policies/rate-limits', { name: `drill ${phase}`, type: 'requests', unit: 'rph', value: LIMIT, conditions: [{ key: 'metadata.phase', value: phase }] });
  }

  let restartLater: number | null = null;
  let next = 0;
  let firstFailure: string | null = null;
  /** Sends requests round robin over the replicas in rotation until `stop`, `CONCURRENCY` at a time. */
  const load = (phase: string, phaseStart: number, until: () => boolean): Promise<Outcome[]> => {
    const out: Outcome[] = [];
    let n = 0;
    return Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (!until()) {
          const live = replicas.filter((r): r is GatewayProcess => r !== null);
          const target = live[next++ % live.length]!;
          const traceId = `drill-${phase}-${n++}`;
          const sent = Date.now();
          let status = 0;
          let answer = '';
          try {
            const res = await fetch(`http://127.0.0.1:${target.port}/v1/chat/completions`, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'x-gateway-api-key': ADMIN,
                'x-gateway-trace-id': traceId,
                'x-gateway-metadata': JSON.stringify({ phase }),
                'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-drill', custom_host: mock.baseURL }),
              },
              body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
              signal: AbortSignal.timeout(15_000),
            });
            answer = await res.text();
            status = res.status;
            if (status >= 500 && firstFailure === null) firstFailure = `${status} ${answer.slice(0, 300)}`;
          } catch {
            status = 0;
          }
          out.push({ phase, status, at: Date.now() - phaseStart, ms: Date.now() - sent, traceId });
        }
      }),
    ).then(() => out);
  };

  /** Replica `i` gets SIGTERM, leaves the rotation once its /ready says so (as an orchestrator would), drains, and this version takes its place. */
  const replace = async (i: number): Promise<void> => {
    const old = replicas[i]!;
    old.child.kill('SIGTERM');
    for (let tries = 0; tries < 50; tries++) {
      const ready = await fetch(`http://127.0.0.1:${old.port}/ready`).then((r) => r.status, () => 0);
      if (ready !== 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    replicas[i] = null;
    await old.exited;
    replicas[i] = await start();
  };

  const faults: Record<string, () => Promise<void>> = {
    baseline: async () => undefined,
    'redis-primary-killed': async () => {
      if (cluster === null) return;
      const victim = cluster.primaryOf(`${prefix}{limits}`);
      log(`killing the redis primary ${victim} (it holds {limits})`);
      await cluster.kill(victim);
      // Restarted before its replica took over, a primary without persistence would come back empty, owning the slots.
      await cluster.failedOver(victim);
      log('a replica took over');
      // It comes back once the phase is over, as an operator brings a crashed node back: a primary without
      // persistence restarted at once can serve its slots empty before it learns it was replaced (docs/operations.md).
      restartLater = victim;
    },
    'rolling-upgrade': async () => {
      // Each replica in turn: out of rotation through /ready, drained, replaced by this version.
      for (let i = 0; i < replicas.length; i++) {
        await replace(i);
        log(`replica ${i} upgraded (port ${replicas[i]!.port})`);
      }
    },
    'gateway-replica-restarted': async () => {
      log('restarting replica 1: SIGTERM (out of rotation via /ready, then drained)');
      await replace(1);
      log(`replica 1 back on port ${replicas[1]!.port}`);
    },
    'postgres-connections-dropped': async () => {
      const c = new pg.Client({ connectionString: DATABASE_URL });
      await c.connect();
      const r = await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'switchyard-gateway' AND pid <> pg_backend_pid()");
      await c.end();
      log(`dropped ${r.rowCount} gateway connections to PostgreSQL`);
    },
  };

  const results: Array<Record<string, unknown>> = [];
  let failed = false;
  for (const phase of phases) {
    const phaseStart = Date.now();
    let stop = false;
    const running = load(phase, phaseStart, () => stop);
    // The fault a third of the way in; the load runs on for the rest of the phase.
    await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 3));
    const faultAt = Date.now() - phaseStart;
    await faults[phase]!();
    const remaining = SECONDS * 1000 - (Date.now() - phaseStart);
    if (remaining > 0) await new Promise((r) => setTimeout(r, remaining));
    stop = true;
    const outcomes = await running;
    if (restartLater !== null) {
      await cluster!.restart(restartLater);
      await cluster!.healthy();
      log(`${restartLater} is back, as a replica`);
      restartLater = null;
    }
    const bad = outcomes.filter((o) => o.status === 0 || o.status >= 500);
    const admitted = outcomes.filter((o) => o.status === 200).length;
    const troubled = outcomes.filter((o) => o.at >= faultAt && (o.status === 0 || o.status >= 500 || o.ms > SLOW_MS));
    const recoveredMs = phase === 'baseline' || troubled.length === 0 ? 0 : Math.max(...troubled.map((o) => o.at)) - faultAt;
    const byStatus: Record<string, number> = {};
    for (const o of bad) byStatus[String(o.status)] = (byStatus[String(o.status)] ?? 0) + 1;
    if (bad.length > 0) log(`${phase}: failures by status ${JSON.stringify(byStatus)}`);
    results.push({ phase, sent: outcomes.length, failed: bad.length, failedByStatus: byStatus, admitted, limit: LIMIT, exceeded: Math.max(0, admitted - LIMIT), recoveredMs, slowestMs: Math.max(...outcomes.map((o) => o.ms)), answered: outcomes.filter((o) => o.status !== 0) });
    log(`${phase}: ${outcomes.length} sent, ${bad.length} failed, ${admitted} admitted of ${LIMIT}`);
    if (firstFailure !== null) log(`${phase}: the first failure: ${firstFailure}`);
    // What the replicas warned about during the phase (deduplicated by message).
    const warned = new Map<string, number>();
    for (const r of replicas) {
      for (const line of (r?.output() ?? '').split('\n')) {
        if (!line.includes('"level":40') && !line.includes('"level":50')) continue;
        try {
          const entry = JSON.parse(line) as { time?: string; msg?: string; err?: string };
          if (entry.time !== undefined && Date.parse(entry.time) < phaseStart) continue;
          const err = entry.err as unknown;
          const why = err === undefined ? '' : ` (${String(typeof err === 'object' && err !== null && 'message' in err ? (err as { message: unknown }).message : err).slice(0, 120)})`;
          const key = `${entry.msg ?? ''}${why}`;
          warned.set(key, (warned.get(key) ?? 0) + 1);
        } catch {
          /* not a log line */
        }
      }
    }
    for (const [msg, count] of warned) log(`${phase}: the replicas warned ${count}× ${msg}`);
    firstFailure = null;
  }

  // Logs: every answered request has its entry (the writers flush within a second or two).
  await new Promise((r) => setTimeout(r, 3000));
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  for (const r of results) {
    const answered = r.answered as Outcome[];
    const rows = await db.query(`SELECT trace_id FROM ${schema}.gateway_logs WHERE trace_id LIKE $1`, [`drill-${r.phase as string}-%`]);
    const logged = new Set(rows.rows.map((x: { trace_id: string }) => x.trace_id));
    r.logsLost = answered.filter((o) => !logged.has(o.traceId)).length;
    delete r.answered;
    if ((r.failed as number) > 0 || (r.exceeded as number) > 0 || (r.logsLost as number) > 0) failed = true;
  }
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();

  console.log('\n| phase | requests | failed | admitted / limit | limit exceeded by | logs lost | recovered in | slowest |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of results) {
    console.log(`| ${r.phase} | ${r.sent} | ${r.failed} | ${r.admitted} / ${r.limit} | ${r.exceeded} | ${r.logsLost} | ${r.recoveredMs} ms | ${r.slowestMs} ms |`);
  }
  writeFileSync(join(dir, 'drill.json'), JSON.stringify(results, null, 2));
  console.log(`\n(${join(dir, 'drill.json')})`);

  for (const r of replicas) {
    if (r === null) continue;
    r.child.kill('SIGTERM');
    await r.exited;
  }
  await mock.close();
  await cluster?.close();
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(2);
});
