import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { finishEntry, type FinishOptions } from '../../plugins/logs/finish.js';
import { newLogId, type LogEntry } from '../../plugins/logs/entry.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../plugins/logs/store/migrations.js';
import { bodyStore } from '../../plugins/logs/store/bodies.js';
import { LogRepository } from '../../plugins/logs/store/repository.js';
import { migrate } from '../../sdk/sql.js';
import { sqliteClient } from '../../sdk/sqlite.js';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startServer } from '../../server/server.js';
import { startMockOpenAI } from '../mocks/openai-upstream.js';

/*
 * Where the log writer's time goes, per entry: the entries of real requests (the bench's chat request, JSON and
 * stream, through the default config with the writer inline so they can be caught), then written again into a
 * fresh store the way the writer thread does (finish, then one insert per batch of 500), timed whole and with
 * each part left out in turn (the part's cost is the difference). `node --import tsx test/bench/writer-cost.ts`;
 * add `--cpu-prof` to the node flags for a profile.
 */

const N = Number(process.env.WRITER_ENTRIES ?? 20_000);
const BATCH = 500;
const KEY = 'writer-cost-key-0001';

async function realEntries(): Promise<LogEntry[]> {
  const caught: LogEntry[] = [];
  const insert = LogRepository.prototype.insert;
  LogRepository.prototype.insert = async function (this: LogRepository, entries: readonly LogEntry[]) {
    for (const e of entries) caught.push(structuredClone(e));
    return insert.call(this, entries);
  };
  const mock = await startMockOpenAI();
  const dataDir = mkdtempSync(join(tmpdir(), 'writer-cost-'));
  const config = { ...DEFAULT_CONFIG, plugins: DEFAULT_CONFIG.plugins.map((p) => (p.name === 'log-store' ? { ...p, options: { writer: 'inline' } } : p)) };
  const server = await startServer({ config, env: { GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: dataDir, GATEWAY_ALLOW_HOSTS: '127.0.0.1', GATEWAY_BOOTSTRAP_KEY: `${KEY}-b` }, port: 0, host: '127.0.0.1' });
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-x', 'x-gateway-api-key': KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL };
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };
  for (const body of [chat, { ...chat, stream: true, stream_options: { include_usage: true } }]) {
    const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
    await r.arrayBuffer();
  }
  await server.close();
  await mock.close();
  LogRepository.prototype.insert = insert;
  rmSync(dataDir, { recursive: true, force: true });
  if (caught.length < 2) throw new Error(`caught ${caught.length} entries`);
  return caught.slice(0, 2);
}

async function timeWrites(samples: LogEntry[], finish: FinishOptions, change: (e: LogEntry) => void): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'writer-cost-store-'));
  const client = sqliteClient(join(dir, 'logs.db'));
  await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
  const repo = new LogRepository(client, bodyStore(join(dir, 'logs.db.bodies')));
  let t = Date.now();
  const batches: LogEntry[][] = [];
  for (let b = 0; b < N / BATCH; b++) {
    const batch: LogEntry[] = [];
    for (let i = 0; i < BATCH; i++) {
      const e = structuredClone(samples[i % samples.length]!);
      t += 1;
      e.id = newLogId(t);
      e.created_at = t;
      e.ended_at = t + 2;
      change(e);
      batch.push(e);
    }
    batches.push(batch);
  }
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  for (const batch of batches) {
    for (const e of batch) finishEntry(e, finish);
    await repo.insert(batch);
  }
  const c = process.cpuUsage(c0);
  const wall = performance.now() - w0;
  await client.close();
  rmSync(dir, { recursive: true, force: true });
  void wall;
  return (c.user + c.system) / N;
}

async function main(): Promise<void> {
  const samples = await realEntries();
  const finish: FinishOptions = { capture: 'truncated', captureBytes: 16 * 1024, scanLimit: 2 * 1024 * 1024 };
  const variants: Array<[string, (e: LogEntry) => void]> = [
    ['as logged', () => undefined],
    ['without bodies', (e) => Object.assign(e, { request_body: null, response_body: null, received_headers: null, request_headers: null, price: null, routing: null, hook_results: null })],
    ['without price', (e) => Object.assign(e, { price: null })],
    ['without headers', (e) => Object.assign(e, { received_headers: null, request_headers: null })],
  ];
  for (let round = 0; round < 2; round++) {
    for (const [name, change] of variants) {
      const us = await timeWrites(samples, finish, change);
      process.stdout.write(`${name.padEnd(18)} ${us.toFixed(1).padStart(6)} µs CPU per entry\n`);
    }
  }
}

await main();
