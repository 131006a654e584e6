import { Agent } from 'undici';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { GatewayPlugin } from '../../../core/index.js';
import { sqlStore, type SqlClient } from '../../../sdk/sql.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, logGatewayPlugins, metricValue, openSqlite, parsePrometheus, tempFile, waitFor } from './helpers.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

const WRITE_DELAY_MS = 500;

/** The sqlite store, registered as `sql`, whose every transaction first waits WRITE_DELAY_MS: a slow database. */
function slowSqlite(file: string): GatewayPlugin {
  return {
    name: 'slow-sqlite',
    apply(api) {
      const store = sqlStore('sqlite');
      api.stores.add('sql', store);
      api.onReady(() => {
        const real = sqliteClient(file);
        const slow: SqlClient = {
          ...real,
          async transaction(fn) {
            await new Promise((r) => setTimeout(r, WRITE_DELAY_MS));
            return real.transaction(fn);
          },
        };
        store.open(slow);
      });
      api.onClose(() => store.client().close());
    },
  };
}

test('a slow store: the queue bound holds, requests are not held up, drops are counted in /metrics and warned about once', async () => {
  const file = await tempFile('slow.db');
  const MAX = 40;
  const TOTAL = 300;
  const gw = await serveGateway({
    plugins: logGatewayPlugins({ file, store: slowSqlite(file), logs: { queueMaxEntries: MAX, batchSize: 10, flushIntervalMs: 20, skipPaths: ['/metrics'] } }),
  });
  const dispatcher = new Agent({ connections: 30 });
  const scrape = async () => parsePrometheus(await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': ADMIN_KEY }, dispatcher } as RequestInit)).text());

  let maxDepth = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      maxDepth = Math.max(maxDepth, metricValue(await scrape(), 'gateway_log_queue_depth'));
      await new Promise((r) => setTimeout(r, 25));
    }
  })();

  let next = 0;
  let ok = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 30 }, async () => {
      while (next < TOTAL) {
        next++;
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN_KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-x' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
          dispatcher,
        } as RequestInit);
        await res.arrayBuffer();
        if (res.status === 200) ok++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  sampling = false;
  await sampler;
  expect(ok).toBe(TOTAL);
  // Writing 300 entries 10 at a time at 500 ms a batch would take 15 s: the requests did not wait for it.
  expect(elapsed).toBeLessThan(7_500);
  expect(maxDepth).toBeGreaterThan(0);
  expect(maxDepth).toBeLessThanOrEqual(MAX);

  // Once the queue has drained: every request was either written or counted as dropped.
  const drained = await waitFor(async () => {
    const m = await scrape();
    return metricValue(m, 'gateway_log_queue_depth') === 0 ? m : undefined;
  }, 15_000, 'the queue to drain');
  const dropped = metricValue(drained, 'gateway_log_dropped_total', { reason: 'queue_full' });
  const written = metricValue(drained, 'gateway_log_written_total');
  expect(dropped).toBeGreaterThan(0);
  expect(metricValue(drained, 'gateway_log_dropped_total')).toBe(dropped);
  expect(written + dropped).toBe(TOTAL);
  const warnings = gw.logs.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('log store: log entries were dropped'));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]!.level).toBe(40);

  await gw.close();
  await dispatcher.close();
  const db = openSqlite(file);
  try {
    expect((db.prepare("SELECT COUNT(*) AS c FROM gateway_logs WHERE route = 'chat.completions'").get() as { c: number }).c).toBe(written);
  } finally {
    db.close();
  }
}, 60_000);
