import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requirePostgresBinaries, startPrimaryAndReplica, type ReplicaPair } from '../helpers/postgres-replica.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * The log and analytics routes read on a replica (docs/operations.md, "Read replicas"): a PostgreSQL primary and a
 * streaming replica of it started for this test (their own data directories and ports), a gateway with
 * DATABASE_URL on the primary and DATABASE_READ_URL on the replica. Writes go to the primary, the routes' reads to
 * the replica, and each answer says how far behind it is.
 */
describe('DATABASE_READ_URL: the log read on a streaming replica', () => {
  const available = requirePostgresBinaries();
  const ADMIN = 'read-replica-bootstrap-key-0001';
  let pair: ReplicaPair;
  let gateway: GatewayProcess;
  let mock: MockUpstream;

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    pair = await startPrimaryAndReplica();
    gateway = await startProcess([], { DATABASE_URL: pair.primaryUrl, DATABASE_READ_URL: pair.replicaUrl, GATEWAY_DATABASE_SCHEMA: 'gw', GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: '7'.repeat(64) });
  }, 90_000);
  afterAll(async () => {
    if (gateway !== undefined) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    await mock?.close();
    await pair?.close();
  });

  test('requests are written on the primary; /v1/logs and analytics read them on the replica, with the lag in a header', async (ctx) => {
    if (!available) ctx.skip();
    const url = `http://127.0.0.1:${gateway.port}/v1`;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN, 'x-gateway-trace-id': `replica-${i}`, 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-r', custom_host: mock.baseURL }) },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    let listed = 0;
    let lag: string | null = null;
    for (let i = 0; i < 100 && listed < 3; i++) {
      const res = await fetch(`${url}/logs?route=chat.completions`, { headers: { 'x-gateway-api-key': ADMIN } });
      lag = res.headers.get('x-gateway-read-lag-ms');
      listed = ((await res.json()) as { data: unknown[] }).data.length;
      if (listed < 3) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listed).toBe(3);
    expect(Number(lag)).toBeGreaterThanOrEqual(0);
    const groups = await fetch(`${url}/analytics/groups/model`, { headers: { 'x-gateway-api-key': ADMIN } });
    expect(groups.status).toBe(200);
    expect(groups.headers.get('x-gateway-read-lag-ms')).not.toBeNull();

    // The reads are the replica's: with its replay paused, a new request is written (on the primary) but not listed,
    // and the lag header grows; once replay resumes, it is.
    const replica = new pg.Client({ connectionString: pair.replicaUrl });
    await replica.connect();
    try {
      expect((await replica.query('SELECT pg_is_in_recovery() AS r')).rows[0].r).toBe(true);
      await replica.query('SELECT pg_wal_replay_pause()');
      const res = await fetch(`${url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': ADMIN, 'x-gateway-trace-id': 'replica-paused', 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-r', custom_host: mock.baseURL }) },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
      });
      await res.text();
      // Written on the primary (the writer flushes within a second), not seen on the paused replica.
      const primary = new pg.Client({ connectionString: pair.primaryUrl });
      await primary.connect();
      for (let i = 0; i < 100; i++) {
        if ((await primary.query("SELECT count(*)::int AS n FROM gw.gateway_logs WHERE trace_id = 'replica-paused'")).rows[0].n === 1) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await primary.end();
      await new Promise((r) => setTimeout(r, 1100));
      const paused = await fetch(`${url}/logs?route=chat.completions`, { headers: { 'x-gateway-api-key': ADMIN } });
      expect(((await paused.json()) as { data: unknown[] }).data).toHaveLength(3);
      expect(Number(paused.headers.get('x-gateway-read-lag-ms'))).toBeGreaterThan(0);
      await replica.query('SELECT pg_wal_replay_resume()');
      let after = 3;
      for (let i = 0; i < 100 && after < 4; i++) {
        after = ((await (await fetch(`${url}/logs?route=chat.completions`, { headers: { 'x-gateway-api-key': ADMIN } })).json()) as { data: unknown[] }).data.length;
        if (after < 4) await new Promise((r) => setTimeout(r, 50));
      }
      expect(after).toBe(4);
    } finally {
      await replica.end();
    }
  }, 60_000);
});
