import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { finishEntry, type FinishOptions } from '../../plugins/logs/finish.js';
import { newLogId, type LogEntry } from '../../plugins/logs/entry.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../plugins/logs/store/migrations.js';
import { bodyStore } from '../../plugins/logs/store/bodies.js';
import { LogRepository } from '../../plugins/logs/store/repository.js';
import { insertSql, metaSql, rowValues } from '../../plugins/logs/store/sql.js';
import { writeBodies } from '../../plugins/logs/store/bodies.js';
import { writeRollups } from '../../plugins/logs/analytics/rollups.js';
import { packEntries, unpackEntries } from '../../plugins/logs/thread/pack.js';
import type { SqlClient } from '../../sdk/index.js';
import { migrate } from '../../sdk/sql.js';
import { sqliteClient } from '../../sdk/sqlite.js';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { startServer } from '../../server/server.js';
import { startMockOpenAI } from '../mocks/openai-upstream.js';

/*
 * Where the log writer's time goes, per entry: the entries of real requests (the bench's chat request, JSON and
 * stream, through the default config with the writer inline so they can be caught), then written again into a
 * fresh store the way the writer thread does (finish, then one insert per batch of 500), timed whole and part by
 * part: the finish, the hand-off between threads, the rows (and each index, by its absence; and, for comparison, the
 * same values as one JSON block per batch), metadata rows, rollups (also for varied traffic), bodies (and the price
 * detail in them). `node --import tsx test/bench/writer-cost.ts`;
 * add `--cpu-prof` to the node flags for a profile.
 */

const N = Number(process.env.WRITER_ENTRIES ?? 20_000);
const BATCH = 500;
const KEY = 'writer-cost-key-0001';

export async function realEntries(): Promise<LogEntry[]> {
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

/** N entries made from the samples: fresh ids and times, `change` applied. */
function entries(samples: LogEntry[], change: (e: LogEntry) => void = () => undefined): LogEntry[] {
  let t = Date.now();
  const out: LogEntry[] = [];
  for (let i = 0; i < N; i++) {
    const e = structuredClone(samples[i % samples.length]!);
    t += 1;
    e.id = newLogId(t);
    e.created_at = t;
    e.ended_at = t + 2;
    change(e);
    out.push(e);
  }
  return out;
}

const batches = <T>(xs: T[]): T[][] => Array.from({ length: Math.ceil(xs.length / BATCH) }, (_, i) => xs.slice(i * BATCH, (i + 1) * BATCH));

/** CPU µs per entry of `work`, over a fresh store (migrated; `prepare` may change its schema first). */
async function timed(work: (repo: LogRepository, client: SqlClient) => Promise<void>, prepare?: (client: SqlClient) => Promise<void>): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'writer-cost-store-'));
  const client = sqliteClient(join(dir, 'logs.db'));
  await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
  if (prepare !== undefined) await prepare(client);
  const repo = new LogRepository(client, bodyStore(join(dir, 'logs.db.bodies')));
  const c0 = process.cpuUsage();
  await work(repo, client);
  const c = process.cpuUsage(c0);
  await client.close();
  rmSync(dir, { recursive: true, force: true });
  return (c.user + c.system) / N;
}

async function main(): Promise<void> {
  const samples = await realEntries();
  const finish: FinishOptions = { capture: 'truncated', captureBytes: 16 * 1024, scanLimit: 2 * 1024 * 1024 };
  const finished = (xs: LogEntry[]) => {
    for (const e of xs) finishEntry(e, finish);
    return xs;
  };
  const rowsOnly = (xs: LogEntry[]) => async (_repo: LogRepository, client: SqlClient) => {
    for (const b of batches(xs)) {
      await client.transaction(async (tx) => {
        for (const e of b) await tx.run(insertSql(1), rowValues(e, null));
      });
    }
  };
  const parts: Array<[string, () => Promise<number>]> = [
    ['whole write (finish + insert), as logged', async () => {
      const xs = entries(samples);
      return timed(async (repo) => {
        for (const b of batches(xs)) await repo.insert(finished(b));
      });
    }],
    ['  finish (headers, redaction, cutting)', async () => {
      const xs = entries(samples);
      const c0 = process.cpuUsage();
      finished(xs);
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / N;
    }],
    ['  hand-off (pack, clone, unpack)', async () => {
      const xs = entries(samples);
      const sizes = xs.map(() => 1000);
      const c0 = process.cpuUsage();
      for (let i = 0; i < xs.length; i += 50) {
        // A hand-over every 10 ms carries about 50 entries at 5,000 requests a second.
        const packed = packEntries(xs.slice(i, i + 50), sizes.slice(i, i + 50));
        unpackEntries(structuredClone(packed, { transfer: [packed.numbers.buffer as ArrayBuffer] }));
      }
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / N;
    }],
    ['  rows, every index', async () => timed(rowsOnly(finished(entries(samples))))],
    ...['gateway_logs_created', 'gateway_logs_workspace', 'gateway_logs_trace'].map((index): [string, () => Promise<number>] => [
      `  rows, without ${index}`,
      async () => timed(rowsOnly(finished(entries(samples))), (client) => client.run(`DROP INDEX ${index}`).then(() => undefined)),
    ]),
    // The floor under the rows: the same values bound into a table with no key and no index (what a row costs before
    // SQLite keeps anything in order; most of it is binding 64 values one by one through better-sqlite3).
    ['  rows into a table without key or index', async () => {
      const xs = finished(entries(samples));
      const width = rowValues(xs[0]!, null).length;
      return timed(async (_repo, client) => {
        await client.run(`CREATE TABLE bare_rows (${Array.from({ length: width }, (_, i) => `c${i}`).join(', ')})`);
        const sql = `INSERT INTO bare_rows VALUES (${new Array(width).fill('?').join(', ')})`;
        for (const b of batches(xs)) await client.transaction(async (tx) => {
          for (const e of b) await tx.run(sql, rowValues(e, null));
        });
      });
    }],
    // What a block layout would save on the rows: each batch's row values as one deflated JSON block in a one-row insert
    // (an experiment, not a layout the store has; docs/logs.md, "Cost of logging").
    ['  rows as one JSON block per batch', async () => {
      const xs = finished(entries(samples));
      return timed(async (_repo, client) => {
        await client.run('CREATE TABLE block_rows (id INTEGER PRIMARY KEY, first_at BIGINT, last_at BIGINT, data BLOB)');
        for (const b of batches(xs)) await client.transaction(async (tx) => {
          const data = deflateRawSync(Buffer.from(JSON.stringify(b.map((e) => rowValues(e, null)))), { level: 1 });
          await tx.run('INSERT INTO block_rows (first_at, last_at, data) VALUES (?, ?, ?)', [b[0]!.created_at, b[b.length - 1]!.created_at, data]);
        });
      });
    }],
    ['  metadata rows (one key each)', async () => {
      const xs = finished(entries(samples, (e) => (e.metadata = { team: 'a' })));
      return timed(async (_repo, client) => {
        for (const b of batches(xs)) await client.transaction(async (tx) => {
          for (const e of b) await tx.run(metaSql(1), [e.id, 'team', 'a', e.created_at, e.workspace_id ?? null]);
        });
      });
    }],
    ['  rollups', async () => {
      const xs = finished(entries(samples));
      return timed(async (_repo, client) => {
        for (const b of batches(xs)) await client.transaction((tx) => writeRollups(tx, b));
      });
    }],
    // Varied traffic: each batch touches more rollup rows (one per key, model and minute, at three levels).
    ['  rollups, 50 keys × 20 models', async () => {
      let i = 0;
      const xs = finished(entries(samples, (e) => {
        e.api_key_id = `key-${i % 50}`;
        e.model = e.model_requested = `model-${(i * 7) % 20}`;
        i++;
      }));
      return timed(async (_repo, client) => {
        for (const b of batches(xs)) await client.transaction((tx) => writeRollups(tx, b));
      });
    }],
    ['  bodies (JSON, deflate, append)', async () => {
      const xs = finished(entries(samples));
      return timed(async (repo, client) => {
        for (const b of batches(xs)) await writeBodies(repo.bodies, client, b);
      });
    }],
    ['  of which the price detail', async () => {
      const xs = finished(entries(samples));
      const without = finished(entries(samples, (e) => (e.price = null)));
      const a = await timed(async (repo, client) => {
        for (const b of batches(xs)) await writeBodies(repo.bodies, client, b);
      });
      const b2 = await timed(async (repo, client) => {
        for (const b of batches(without)) await writeBodies(repo.bodies, client, b);
      });
      return a - b2;
    }],
  ];
  const rounds = Number(process.env.WRITER_ROUNDS ?? 3);
  const results = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of parts) {
      const list = results.get(name) ?? [];
      list.push(await run());
      results.set(name, list);
    }
  }
  console.log(`The log writer's CPU per entry (${N} entries of the bench's two requests, batches of ${BATCH}; median of ${rounds} rounds, µs):`);
  for (const [name, list] of results) {
    const sorted = [...list].sort((a, b) => a - b);
    console.log(`${name.padEnd(44)} ${sorted[sorted.length >> 1]!.toFixed(1).padStart(6)}   (${sorted.map((x) => x.toFixed(1)).join(', ')})`);
  }
}

if (process.argv[1]?.endsWith("writer-cost.ts")) await main();
