import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgBouncer, requirePgBouncer, type PgBouncerHandle } from '../helpers/pgbouncer.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * PostgreSQL behind a transaction-mode pooler (docs/operations.md, "PostgreSQL behind a pooler"): three gateway
 * processes, each with a pool of ten, through PgBouncer with three server connections in transaction mode. The
 * migrations (run by three processes starting together), the control plane, the limits' policies and the log
 * all work: nothing relies on a session (its search_path, a named prepared statement, a session lock).
 */
const ADMIN = 'pooler-bootstrap-admin-key-0001';

describe('three gateway processes through PgBouncer in transaction mode', async () => {
  const available = requirePgBouncer() && (await requireService('PostgreSQL', DATABASE_URL));
  const schema = uniqueSchema('pooler');
  let bouncer: PgBouncerHandle;
  let mock: MockUpstream;
  const processes: GatewayProcess[] = [];
  const url = (i: number) => `http://127.0.0.1:${processes[i % 3]!.port}`;
  const call = async (i: number, method: string, path: string, body?: unknown, key = ADMIN) => {
    const res = await fetch(`${url(i)}/v1${path}`, { method, headers: { 'x-gateway-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    const target = new URL(DATABASE_URL);
    bouncer = await startPgBouncer({ host: target.hostname, port: Number(target.port || 5432), database: target.pathname.slice(1), user: decodeURIComponent(target.username || 'postgres') }, 3);
    const env = { DATABASE_URL: bouncer.url, GATEWAY_DATABASE_POOLER: 'transaction', GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: 'c'.repeat(64) };
    processes.push(...(await Promise.all([startProcess([], env), startProcess([], env), startProcess([], env)])));
  }, 90_000);
  afterAll(async () => {
    for (const p of processes) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await mock?.close();
    await bouncer?.close();
    if (available) await dropSchema(schema);
  });

  test('the control plane, policies, requests and their log, from every process', async (ctx) => {
    if (!available) ctx.skip();
    // Another client of the pooler sets its own search_path all along, as another application would: a session
    // setting of the gateway's would be overwritten on the server connections they share.
    const { default: pg } = await import('pg');
    const other = new pg.Client({ connectionString: bouncer.url });
    await other.connect();
    let poisoning = true;
    const poison = (async () => {
      while (poisoning) await other.query('SET search_path TO public');
    })();
    ctx.onTestFinished(async () => {
      poisoning = false;
      await poison;
      await other.end();
    });
    const ws = await call(0, 'POST', '/workspaces', { name: 'pooled', slug: 'pooled' });
    expect(ws.status, JSON.stringify(ws.body)).toBe(200);
    const key = await call(1, 'POST', '/api-keys', { type: 'workspace-service', name: 'pooled', workspace_id: ws.body.id, scopes: ['completions.write', 'logs.read'] });
    expect(key.status).toBe(200);
    const policy = await call(2, 'POST', '/policies/rate-limits', { name: 'ten an hour per process', type: 'requests', unit: 'rph', value: 10, workspace_id: ws.body.id });
    expect(policy.status).toBe(200);
    // Thirty requests, ten at a time, over the three: each process reads the key and the policy through the pooler.
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, lane) => {
        for (let i = lane; i < 30; i += 10) {
          const res = await fetch(`${url(i)}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.body.key, 'x-gateway-trace-id': `pooled-${i}`, 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-pooled', custom_host: mock.baseURL }) },
            body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
          });
          await res.text();
          statuses.push(res.status);
        }
      }),
    );
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    // The policy was read through the pooler by every process (counters are per process without Redis: ten each).
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    // The eleventh request to one process is refused: the policy is enforced.
    const refused = await fetch(`${url(0)}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.body.key, 'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-pooled', custom_host: mock.baseURL }) },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
    });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain(policy.body.id);
    // Every request is in the log (written by three processes through three server connections), read from any.
    let listed = 0;
    for (let i = 0; i < 100 && listed < 31; i++) {
      const logs = await call(i, 'GET', '/logs?limit=100&route=chat.completions', undefined, key.body.key);
      listed = (logs.body.data as unknown[]).length;
      if (listed < 31) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listed).toBe(31);
  }, 60_000);
});
