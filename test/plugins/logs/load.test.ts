import { Agent } from 'undici';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { serveGateway } from '../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN_KEY, logGatewayPlugins, metricValue, openSqlite, parsePrometheus, tempFile } from './helpers.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

const TOTAL = 2000;
const CONCURRENCY = 64;

/** Request i: a non-stream chat, a stream with usage, a stream without, or a proxied GET /v1/models. */
function request(url: string, i: number): { url: string; init: RequestInit } {
  const headers: Record<string, string> = {
    'x-gateway-api-key': ADMIN_KEY,
    'x-gateway-provider': 'openai',
    'x-gateway-custom-host': mock.baseURL,
    authorization: 'Bearer sk-load-test-key',
    'x-gateway-trace-id': `load-${i}`,
  };
  const kind = i % 4;
  if (kind === 3) return { url: `${url}/v1/models`, init: { headers } };
  const body: Record<string, unknown> = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `request ${i}` }] };
  if (kind >= 1) body.stream = true;
  if (kind === 1) body.stream_options = { include_usage: true };
  return { url: `${url}/v1/chat/completions`, init: { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) } };
}

test(`a burst of ${TOTAL} requests (${CONCURRENCY} at a time, proxied ones included): exactly one log entry each`, async () => {
  const file = await tempFile('load.db');
  const gw = await serveGateway({ plugins: logGatewayPlugins({ file, logs: { flushIntervalMs: 200, batchSize: 500 } }) });
  const dispatcher = new Agent({ connections: CONCURRENCY });
  const statuses = new Map<number, number>();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) {
        const i = next++;
        const { url, init } = request(gw.url, i);
        const res = await fetch(url, { ...init, dispatcher } as RequestInit);
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  expect(Object.fromEntries(statuses)).toEqual({ 200: TOTAL });

  const metricsText = await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': ADMIN_KEY }, dispatcher } as RequestInit)).text();
  const parsed = parsePrometheus(metricsText);
  expect(metricValue(parsed, 'gateway_requests_total', { route: 'proxy' })).toBe(TOTAL / 4);
  expect(metricValue(parsed, 'gateway_log_dropped_total')).toBe(0);
  await gw.close();
  await dispatcher.close();

  const db = openSqlite(file);
  try {
    const rows = db.prepare("SELECT trace_id, route, status, stream, tokens_estimated, total_tokens FROM gateway_logs WHERE trace_id LIKE 'load-%'").all() as {
      trace_id: string; route: string; status: number; stream: number; tokens_estimated: number; total_tokens: number | null;
    }[];
    expect(rows).toHaveLength(TOTAL);
    const ids = new Set(rows.map((r) => r.trace_id));
    expect(ids.size).toBe(TOTAL);
    for (let i = 0; i < TOTAL; i++) expect(ids.has(`load-${i}`)).toBe(true);
    const byKind = (kind: number) => rows.filter((r) => Number(r.trace_id.slice(5)) % 4 === kind);
    expect(byKind(3).every((r) => r.route === 'proxy' && r.status === 200)).toBe(true);
    expect(byKind(0).every((r) => r.route === 'chat.completions' && r.stream === 0 && r.total_tokens === 11)).toBe(true);
    expect(byKind(1).every((r) => r.stream === 1 && r.tokens_estimated === 0 && r.total_tokens === 11)).toBe(true);
    // A stream whose client asked for no usage: the gateway asked the upstream for it, so it is counted, not estimated.
    expect(byKind(2).every((r) => r.stream === 1 && r.tokens_estimated === 0 && r.total_tokens === 11)).toBe(true);
  } finally {
    db.close();
  }
  console.log(`load: ${TOTAL} requests in ${seconds.toFixed(2)} s (${(TOTAL / seconds).toFixed(0)} req/s) with the SQLite log store`);
}, 60_000);
