import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { health } from '../../../../plugins/health/index.js';
import { rebuildRollups } from '../../../../plugins/logs/analytics/rollups.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../../plugins/logs/store/migrations.js';
import { migrate } from '../../../../sdk/sql.js';
import { sqliteClient } from '../../../../sdk/sqlite.js';
import { serveGateway } from '../../../helpers/serve.js';
import { startMockOpenAI, type MockUpstream } from '../../../mocks/openai-upstream.js';
import { ADMIN_KEY, logGatewayPlugins, tempFile } from '../helpers.js';

/*
 * The log routes read on threads of their own: a query that scans a large
 * table leaves the event loop free (health checks are answered while it
 * runs), and one past the time limit ends in a 503 naming the limit.
 */

const ROWS = 300_000;
const T0 = Date.UTC(2025, 5, 1);

/** A log file holding ROWS entries over ten days, written in SQL (fast) rather than through the writer. */
async function bigLog(): Promise<string> {
  const file = await tempFile('readers.db');
  const client = sqliteClient(file);
  await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
  await client.run(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
     INSERT INTO gateway_logs (id, created_at, ended_at, route, method, path, status, stream, internal, aborted, latency_ms, tokens_estimated, cost_status, pricing_multiplier, retry_count, attempt_count, fallback_count, request_body_truncated, response_body_truncated, metadata, api_key_id)
     SELECT printf('log_%08d', i), ${T0} + i * 2880, ${T0} + i * 2880 + 5, 'chat.completions', 'POST', '/v1/chat/completions', 200, 0, 0, 0, i % 997, 0, 'no_usage', 1, 0, 1, 0, 0, 0, '{"team":"blue"}', 'key-' || (i % 50) FROM n`,
  );
  await client.run(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS}) INSERT INTO gateway_log_metadata (log_id, meta_key, meta_value, created_at) SELECT printf('log_%08d', i), 'team', 'blue', ${T0} + i * 2880 FROM n`);
  await rebuildRollups(client);
  await client.close();
  return file;
}

let file: string;
let mock: MockUpstream;
beforeAll(async () => {
  file = await bigLog();
  mock = await startMockOpenAI();
}, 120_000);
afterAll(async () => {
  await mock.close();
});

const auth = { 'x-gateway-api-key': ADMIN_KEY };
// A filter no rollup keeps (metadata): the route scans every row in range, all ten days of them.
const HEAVY = `/v1/analytics/groups/api_key?metadata.team=blue&columns=p95_latency,avg_latency&from=${T0}&to=${T0 + 11 * 86_400_000}`;

/** A chat completion through the gateway to the mock. */
const chat = (url: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-test' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });

/** Health checks and chat completions answered, one after another, while the heavy query runs; and the query's answer. */
async function servedDuringHeavyQuery(url: string): Promise<{ answered: number; chats: number; status: number; body: { data: { api_key: string; requests: number }[] } }> {
  let done = false;
  const heavy = fetch(`${url}${HEAVY}`, { headers: auth }).then(async (res) => {
    done = true;
    return { status: res.status, body: (await res.json()) as { data: { api_key: string; requests: number }[] } };
  });
  let answered = 0;
  let chats = 0;
  while (!done) {
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    if (!done) answered++;
    const completion = await chat(url);
    expect(completion.status).toBe(200);
    await completion.arrayBuffer();
    if (!done) chats++;
  }
  return { answered, chats, ...(await heavy) };
}

describe('log reads on reader threads', () => {
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  let inline: Awaited<ReturnType<typeof serveGateway>>;
  beforeAll(async () => {
    gw = await serveGateway({ plugins: [health(), ...logGatewayPlugins({ file })] });
    inline = await serveGateway({ plugins: [health(), ...logGatewayPlugins({ file, logs: { readers: 0 } })] });
  });
  afterAll(async () => {
    await gw.close();
    await inline.close();
  });

  test('health checks and chat completions are answered while a query scanning 300,000 rows runs', async () => {
    const { answered, chats, status, body } = await servedDuringHeavyQuery(gw.url);
    expect(status).toBe(200);
    expect(body.data).toHaveLength(50);
    expect(body.data.reduce((a, r) => a + r.requests, 0)).toBe(ROWS);
    expect(answered).toBeGreaterThan(5);
    expect(chats).toBeGreaterThan(5);
  }, 60_000);

  test('the same query on the event loop (readers: 0) holds every request until it ends', async () => {
    const { answered, chats, status } = await servedDuringHeavyQuery(inline.url);
    expect(status).toBe(200);
    // At most the ones sent before the query reached the database.
    expect(answered).toBeLessThanOrEqual(1);
    expect(chats).toBeLessThanOrEqual(1);
  }, 60_000);
});

describe('the analytics time limit', () => {
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  beforeAll(async () => {
    gw = await serveGateway({ plugins: logGatewayPlugins({ file, logs: { queryTimeoutMs: 100 } }) });
  });
  afterAll(async () => {
    await gw.close();
  });

  test('a query past queryTimeoutMs is a 503 query_timeout naming the limit; the gateway keeps answering', async () => {
    const res = await fetch(`${gw.url}${HEAVY}`, { headers: auth });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { message: string; type: string; code: string; param: string | null } };
    expect(body.error).toMatchObject({ type: 'timeout_error', code: 'query_timeout', param: null });
    expect(body.error.message).toContain('100 ms');
    expect(body.error.message).toContain('queryTimeoutMs');
    // A query the rollups answer is well within the limit.
    const quick = await fetch(`${gw.url}/v1/analytics/groups/api_key?from=${T0}&to=${T0 + 86_400_000}`, { headers: auth });
    expect(quick.status).toBe(200);
    expect(((await quick.json()) as { data: unknown[] }).data).toHaveLength(50);
  }, 60_000);
});
