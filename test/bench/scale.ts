import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LogRepository } from '../../plugins/logs/store/repository.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../plugins/logs/store/migrations.js';
import { newLogId, type LogEntry } from '../../plugins/logs/entry.js';
import { migrate } from '../../sdk/sql.js';
import { sqliteClient } from '../../sdk/sqlite.js';
import { startGateway, stopAll } from './children.js';
import { fillLog } from './fill-log.js';
import { machine } from './report.js';

/*
 * `npm run bench:scale`: the log store at size. SCALE_ROWS entries (default 1,000,000; the issue's figure
 * is 10,000,000) over 30 days, filled by fill-log.ts into a fresh data dir; the built gateway started on
 * it; each log and analytics route timed through the real server (median of five); /health timed while
 * the heaviest query (a filter no rollup keeps, a scan of every row) runs; and the writer's CPU per entry
 * into the full store against an empty one. Writes docs/scale.md.
 */

const ROWS = Number(process.env.SCALE_ROWS ?? 1_000_000);
const API_KEY = 'scale-key-000001';
const DAY = 86_400_000;
const DOC = fileURLToPath(new URL('../../docs/scale.md', import.meta.url));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(url: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { 'x-gateway-api-key': API_KEY } });
  await res.arrayBuffer();
  return { ms: performance.now() - t0, status: res.status };
}

/** The writer's CPU per entry (its insert: rows, metadata, rollups) for batches of 100 varied entries. */
async function writeCost(file: string): Promise<number> {
  const client = sqliteClient(file);
  await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
  const repo = new LogRepository(client);
  const batches: LogEntry[][] = [];
  let t = Date.now();
  for (let b = 0; b < 200; b++) {
    const batch: LogEntry[] = [];
    for (let i = 0; i < 100; i++) {
      t += 7;
      const n = b * 100 + i;
      batch.push({
        id: newLogId(t), created_at: t, ended_at: t + 300, trace_id: `${n}`.padStart(32, '0'), span_id: null, parent_span_id: null, span_name: null,
        workspace_id: `ws-${n % 3}`, api_key_id: `key-${n % 50}`, config_id: null, prompt_id: null, prompt_version: null, route: 'chat.completions',
        front_door: 'chat', method: 'POST', path: '/v1/chat/completions', provider_requested: null, provider: 'openai', model_requested: `model-${n % 20}`,
        model: `model-${n % 20}`, target_path: '/v1/chat/completions', status: n % 20 === 0 ? 500 : 200, stream: false, internal: false, aborted: false,
        latency_ms: 200 + (n * 37) % 3000, upstream_latency_ms: null, first_byte_ms: null, ttft_ms: null, prompt_tokens: 100, completion_tokens: 20,
        total_tokens: 120, cached_tokens: 0, reasoning_tokens: 0, tokens_estimated: false, cost: 0.0001, cost_status: 'priced', pricing_multiplier: 1,
        cache_status: 'DISABLED', retry_count: 0, attempt_count: 1, fallback_count: 0, attempts: [], metadata: n % 2 === 0 ? { team: `team-${n % 10}` } : null,
        hook_results: null, error_code: null, error_message: null, limit_policy_id: null, rpc_method: null, tool_name: null, request_headers: null,
        request_body: `{"model":"model-${n % 20}","messages":[{"role":"user","content":"${'x'.repeat(700)}"}]}`, request_body_truncated: false,
        response_body: `{"id":"c","choices":[{"message":{"content":"${'x'.repeat(700)}"}}]}`, response_body_truncated: false, kind: 'api',
      } as unknown as LogEntry);
    }
    batches.push(batch);
  }
  const c0 = process.cpuUsage();
  for (const b of batches) await repo.insert(b);
  const c = process.cpuUsage(c0);
  await client.close();
  return (c.user + c.system) / 20_000;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-scale-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'gateway.db');
  const now = Date.now();
  const t0 = Date.now();
  await fillLog(file, { rows: ROWS, now, progress: (n) => process.stdout.write(`\rscale: ${n} of ${ROWS} entries`) });
  const fillS = (Date.now() - t0) / 1000;
  const sizeGb = statSync(file).size / 2 ** 30;
  const bodiesGb = readdirSync(`${file}.bodies`).reduce((a, n) => a + statSync(join(`${file}.bodies`, n)).size, 0) / 2 ** 30;
  console.log(`\nscale: filled in ${fillS.toFixed(0)} s, ${sizeGb.toFixed(2)} GiB of database and ${bodiesGb.toFixed(2)} GiB of body segments`);

  const empty = join(dir, 'empty.db');
  const costEmpty = await writeCost(empty);
  const costFull = await writeCost(file);

  const gateway = await startGateway(API_KEY, join(dir, 'stdout.log'), { dataDir: dir });
  const from = now - 30 * DAY;
  const q = (path: string) => `${gateway.url}${path}`;
  const routes: [string, string][] = [
    ['time series, 30 days by day', `/v1/analytics/timeseries?from=${from}&to=${now}&interval=day`],
    ['time series, 30 days by hour', `/v1/analytics/timeseries?from=${from}&to=${now}&interval=hour`],
    ['dashboard overview (time series, last 24 h, 15 min)', '/v1/analytics/timeseries'],
    ['group by API key, 30 days, cost/p95/success', `/v1/analytics/groups/api_key?from=${from}&columns=cost,p95_latency,success_rate`],
    ['group by model, 30 days, every column', `/v1/analytics/groups/model?from=${from}&columns=cost,total_tokens,avg_tokens,avg_latency,p95_latency,p99_latency,success_rate,error_count,cache_hit_rate,last_seen,first_seen`],
    ['group by status code, 7 days', `/v1/analytics/groups/status_code?from=${now - 7 * DAY}&columns=cost,p95_latency`],
    ['log list, first page', '/v1/logs?limit=50'],
    ['log list, by API key', '/v1/logs?api_key=key-7&limit=50'],
    ['log list, by model', '/v1/logs?model=model-3&limit=50'],
    ['log list, by status', '/v1/logs?status=503&limit=50'],
    ['log list, a filter matching nothing', '/v1/logs?api_key=key-none&limit=50'],
    ['one log by id', `/v1/logs/log_${String(Math.floor(ROWS / 2)).padStart(12, '0')}`],
  ];
  const lines = ['| route | median of 5 | status |', '|---|--:|--:|'];
  for (const [label, path] of routes) {
    await timed(q(path));
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await timed(q(path)));
    const ms = median(runs.map((r) => r.ms));
    lines.push(`| ${label} | ${ms < 10 ? ms.toFixed(1) : ms.toFixed(0)} ms | ${runs[0]!.status} |`);
    console.log(`  ${label}: ${ms.toFixed(1)} ms (${runs[0]!.status})`);
  }

  // The heaviest: a metadata filter, which no rollup keeps: every row of 30 days scanned on a reader thread.
  const heavyPath = `/v1/analytics/groups/api_key?metadata.team=team-3&from=${from}&columns=p95_latency`;
  let done = false;
  const heavyStart = performance.now();
  const heavy = timed(q(heavyPath)).then((r) => ((done = true), r));
  const health: number[] = [];
  while (!done) {
    const t = performance.now();
    await (await fetch(q('/health'))).arrayBuffer();
    health.push(performance.now() - t);
  }
  const heavyResult = await heavy;
  const heavyMs = performance.now() - heavyStart;
  await stopAll();

  const text = `# The log store at scale

Written by \`npm run bench:scale\` (test/bench/scale.ts), which fills a fresh data dir with
${ROWS.toLocaleString('en-US')} entries over 30 days (test/bench/fill-log.ts: 20 models, 50 API keys, about 5%
errors, bodies of about 1.5 KB of text in the body segments, a metadata key on half; rollups built as migration 9
builds them, minutes for the last 48 hours),
starts the built gateway on it and times each route through the real server. \`SCALE_ROWS\` sets the
number of entries. See [logs.md](logs.md) for the storage layout and the rollups.

- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} (UTC); ${machine()}
- Fill: ${fillS.toFixed(0)} s; database ${sizeGb.toFixed(2)} GiB (${((sizeGb * 2 ** 30) / ROWS).toFixed(0)} bytes an entry: rows, indexes, metadata, rollups), body segments ${bodiesGb.toFixed(2)} GiB (${((bodiesGb * 2 ** 30) / ROWS).toFixed(0)} bytes an entry).

## Routes

${lines.join('\n')}

## The event loop during a full scan

A metadata filter (which no rollup keeps) over 30 days: ${heavyResult.status === 200 ? `answered in ${(heavyMs / 1000).toFixed(1)} s` : `status ${heavyResult.status} after ${(heavyMs / 1000).toFixed(1)} s (the time limit)`}, on a reader
thread. Meanwhile ${health.length} \`GET /health\` one after another: median ${median(health).toFixed(1)} ms, max ${Math.max(...health).toFixed(1)} ms.

## Writing into a full store

The writer's CPU per entry (rows, metadata rows, rollups; batches of 100 varied entries, in process):
${costEmpty.toFixed(1)} µs into an empty store, ${costFull.toFixed(1)} µs into this one (${(costFull / costEmpty).toFixed(2)}×).
`;
  writeFileSync(DOC, text);
  console.log(`scale: wrote ${DOC}`);
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    console.error(err);
    await stopAll();
    process.exit(1);
  },
);
