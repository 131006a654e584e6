import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { DATABASE_URL, dropSchema, REDIS_URL, requireService, uniquePrefix, uniqueSchema, clearRedisPrefix } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

const ADMIN = 'multi-instance-bootstrap-key-0001';

/**
 * Three `npm start`-style processes with no config file, only REDIS_URL and DATABASE_URL (plus a key
 * prefix and a schema of this test's own, since the servers are shared with other runs): they share
 * policies and keys (PostgreSQL), limit counters and the cache (Redis), and the request log.
 */
describe('three gateway processes sharing Redis and PostgreSQL through two variables', async () => {
  const available = (await requireService('Redis', REDIS_URL)) && (await requireService('PostgreSQL', DATABASE_URL));
  const schema = uniqueSchema('multi');
  const prefix = uniquePrefix('multi');
  let mock: MockUpstream;
  const processes: GatewayProcess[] = [];
  const url = (i: number) => `http://127.0.0.1:${processes[i % processes.length]!.port}`;

  const admin = async (i: number, method: string, path: string, body?: unknown, key = ADMIN) => {
    const res = await fetch(`${url(i)}/v1${path}`, {
      method,
      headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text);
  };
  const chat = (i: number, config: Record<string, unknown> = {}, key = ADMIN) =>
    fetch(`${url(i)}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': key,
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-multi', custom_host: mock.baseURL, ...config }),
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
    });

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    const env = {
      REDIS_URL,
      DATABASE_URL,
      GATEWAY_REDIS_PREFIX: prefix,
      GATEWAY_DATABASE_SCHEMA: schema,
      GATEWAY_BOOTSTRAP_KEY: ADMIN,
      GATEWAY_ENCRYPTION_KEY: 'a'.repeat(64),
    };
    // Started together: the migrations and the first-start setup are serialised across instances.
    processes.push(...(await Promise.all([startProcess([], env), startProcess([], env), startProcess([], env)])));
  }, 90_000);

  afterAll(async () => {
    for (const p of processes) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await mock?.close();
    if (!available) return;
    await dropSchema(schema);
    await clearRedisPrefix(prefix);
  });

  test('300 concurrent requests against a 100-per-minute policy: exactly 100 succeed, the rest get 429 with the headers', async (ctx) => {
    if (!available) ctx.skip();
    const policy = await admin(0, 'POST', '/policies/rate-limits', { name: 'hundred a minute', type: 'requests', unit: 'rpm', value: 100 });
    // Windows are calendar minutes: start well inside one, so the burst cannot straddle two.
    const second = new Date().getUTCSeconds();
    if (second > 40) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    const before = mock.requests.length;
    const answers = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const res = await chat(i);
        return { status: res.status, headers: res.headers, body: await res.text() };
      }),
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(ok).toHaveLength(100);
    expect(refused).toHaveLength(200);
    expect(mock.requests.length - before).toBe(100);
    for (const a of refused) {
      expect(JSON.parse(a.body).error).toMatchObject({ code: 'rate_limit_exceeded' });
      expect(a.body).toContain(policy.id);
      expect(a.headers.get('x-ratelimit-limit-requests')).toBe('100');
      expect(a.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(Number(a.headers.get('x-ratelimit-reset-requests'))).toBeGreaterThan(0);
      expect(Number(a.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
    // Each success saw a distinct count: no two instances handed out the same slot.
    const remaining = ok.map((a) => Number(a.headers.get('x-ratelimit-remaining-requests'))).sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));

    // The counters are one: any instance reads the same.
    const usage = await admin(2, 'GET', `/policies/rate-limits/${policy.id}/usage`);
    expect(usage.data).toEqual([{ group: {}, used: 100, reserved: 0, remaining: 0 }]);
    await admin(1, 'DELETE', `/policies/rate-limits/${policy.id}`);
  }, 120_000);

  test('keys, the request log and the cache are shared too', async (ctx) => {
    if (!available) ctx.skip();
    const ws = await admin(0, 'POST', '/workspaces', { name: 'shared', slug: 'shared' });
    const key = (await admin(0, 'POST', '/api-keys', { type: 'workspace-service', name: 'shared', workspace_id: ws.id, scopes: ['completions.write', 'logs.read'] })).key;
    const cached = { cache: { mode: 'simple' } };
    const first = await chat(1, cached, key);
    expect([first.status, first.headers.get('x-gateway-cache-status')]).toEqual([200, 'MISS']);
    await first.text();
    // Saved in Redis by instance 1 (once its answer ended), found by instance 2.
    const until = Date.now() + 5000;
    const seen = ['MISS'];
    let status: string | null = null;
    // A try that comes before instance 1's write reached Redis is a MISS of its own, and is logged too.
    while (status !== 'HIT' && Date.now() < until) {
      const res = await chat(2, cached, key);
      await res.text();
      status = res.headers.get('x-gateway-cache-status');
      seen.push(status ?? 'none');
      if (status !== 'HIT') await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('HIT');
    // Logged by instances 1 and 2, read from instance 0: every request made above (a first look at instance 2 may
    // have come before the entry was in Redis, a MISS of its own).
    const logs = await (async () => {
      for (;;) {
        const list = await admin(0, 'GET', '/logs?route=chat.completions', undefined, key);
        if (list.data.length >= seen.length || Date.now() > until) return list;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    expect(logs.data.map((e: { cache_status: string }) => e.cache_status).sort()).toEqual(seen.sort());
    expect(seen.filter((s) => s === 'HIT')).toEqual(['HIT']);
  }, 30_000);
});
