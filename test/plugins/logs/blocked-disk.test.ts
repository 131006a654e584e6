import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, logGatewayPlugins, metricValue, openSqlite, parsePrometheus, tempFile, waitFor } from './helpers.js';

const require = createRequire(import.meta.url);

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

/**
 * A disk that stops: another connection holds the SQLite file's write lock, so the writer thread
 * is stuck in its insert (waiting on the lock, then failing and retrying). Requests go on being
 * answered all the while: they are sent, and all answered, before the lock is let go, so a
 * gateway that waited for its log would never answer them and the test would time out.
 */
test('a store that blocks never holds up requests: they are answered while it is blocked, drops are counted, and what was kept is written once it frees', async () => {
  const file = await tempFile('blocked.db');
  const MAX = 50;
  const TOTAL = 200;
  const gw = await serveGateway({
    plugins: logGatewayPlugins({ file, logs: { queueMaxEntries: MAX, batchSize: 10, flushIntervalMs: 10, maxWriteAttempts: 1000, skipPaths: ['/metrics'] } }),
  });
  const dispatcher = new Agent({ connections: 20 });
  const scrape = async () => parsePrometheus(await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': ADMIN_KEY }, dispatcher } as RequestInit)).text());
  const send = async (trace: string) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-x', 'x-gateway-trace-id': trace },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      dispatcher,
    } as RequestInit);
    await res.arrayBuffer();
    return res.status;
  };

  // Before: the writer works.
  expect(await send('blocked-before')).toBe(200);
  await waitFor(async () => (metricValue(await scrape(), 'gateway_log_written_total') === 1 ? true : undefined), 5000, 'the first entry to be written');

  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  const holder = new Database(file);
  holder.exec('BEGIN EXCLUSIVE');
  let statuses: number[];
  let during: ReturnType<typeof parsePrometheus>;
  try {
    let next = 0;
    statuses = [];
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < TOTAL) statuses.push(await send(`blocked-${next++}`));
      }),
    );
    during = await scrape();
    // Still blocked: nothing more was written.
    expect(metricValue(during, 'gateway_log_written_total')).toBe(1);
  } finally {
    holder.exec('COMMIT');
    holder.close();
  }
  expect(statuses.filter((s) => s === 200)).toHaveLength(TOTAL);
  // The queue held at most its bound (waiting and in flight); the rest was dropped and counted.
  const depth = metricValue(during, 'gateway_log_queue_depth');
  expect(depth).toBeGreaterThan(0);
  expect(depth).toBeLessThanOrEqual(MAX);
  const dropped = metricValue(during, 'gateway_log_dropped_total', { reason: 'queue_full' });
  expect(dropped).toBe(TOTAL - depth);
  expect(metricValue(during, 'gateway_log_dropped_total')).toBe(dropped);

  // Once the lock is gone, everything kept is written, once.
  const after = await waitFor(async () => {
    const m = await scrape();
    return metricValue(m, 'gateway_log_queue_depth') === 0 ? m : undefined;
  }, 20_000, 'the queue to drain');
  expect(metricValue(after, 'gateway_log_written_total')).toBe(1 + depth);
  await gw.close();
  await dispatcher.close();
  const db = openSqlite(file);
  try {
    const rows = db.prepare("SELECT trace_id FROM gateway_logs WHERE trace_id LIKE 'blocked-%'").all() as { trace_id: string }[];
    expect(rows).toHaveLength(1 + depth);
    expect(new Set(rows.map((r) => r.trace_id)).size).toBe(rows.length);
  } finally {
    db.close();
  }
}, 60_000);
