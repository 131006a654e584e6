import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLogger } from '../../core/index.js';
import { redisBreakerState } from '../../plugins/breaker/redis-state.js';
import { redisCacheStore } from '../../plugins/cache/stores/redis/index.js';
import { redisLimitStore } from '../../plugins/limits/redis-store.js';
import { redisRouteState } from '../../plugins/routing/state.js';
import { redisConnection } from '../../sdk/index.js';
import { startProcess, type GatewayProcess } from '../helpers/process.js';
import { requireRedisBinaries, startRedisCluster, startRedisSentinel, type RedisClusterHandle, type RedisSentinelHandle } from '../helpers/redis-topology.js';
import { DATABASE_URL, dropSchema, requireService, uniquePrefix, uniqueSchema } from '../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';

/**
 * The topologies a platform team hands the gateway (docs/operations.md, "Topology"): a Redis Cluster of three
 * primaries with a replica each, and a primary with a replica behind three Sentinels, started from the
 * redis-server binary; three gateway processes on each, sharing PostgreSQL. Limits are exact across the three
 * as on one Redis; a primary killed under load costs no request a 5xx and no count (it was on a replica
 * before the request went on), so the limit stays exact after the replica is promoted.
 */
const ADMIN = 'redis-topology-bootstrap-key-01';

interface Fleet {
  processes: GatewayProcess[];
  schema: string;
  prefix: string;
}

async function startFleet(redisUrl: string, name: string): Promise<Fleet> {
  const schema = uniqueSchema(name);
  const prefix = uniquePrefix(name).replace(/[{}]/g, '');
  const env = { REDIS_URL: redisUrl, DATABASE_URL, GATEWAY_REDIS_PREFIX: prefix, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_BOOTSTRAP_KEY: ADMIN, GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) };
  const processes = await Promise.all([startProcess([], env), startProcess([], env), startProcess([], env)]);
  return { processes, schema, prefix };
}

async function stopFleet(fleet: Fleet | undefined): Promise<void> {
  if (fleet === undefined) return;
  for (const p of fleet.processes) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
  await dropSchema(fleet.schema);
}

/** Calls for one fleet: the admin API and a chat request, round robin over its processes. */
function client(fleet: () => Fleet, mock: () => MockUpstream) {
  const url = (i: number) => `http://127.0.0.1:${fleet().processes[i % 3]!.port}`;
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url(0)}/v1${path}`, { method, headers: { 'x-gateway-api-key': ADMIN, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text);
  };
  const chat = async (i: number, metadata: string) => {
    const started = performance.now();
    const res = await fetch(`${url(i)}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': ADMIN,
        'x-gateway-metadata': JSON.stringify({ run: metadata }),
        'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-topology', custom_host: mock().baseURL }),
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
    });
    await res.text();
    return { status: res.status, ms: performance.now() - started };
  };
  /** `n` requests, `concurrency` at a time, against the policy grouped by this run's metadata. */
  const burst = async (n: number, concurrency: number, run: string) => {
    const out: Array<{ status: number; ms: number }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          const i = next++;
          out.push(await chat(i, run));
        }
      }),
    );
    return out;
  };
  /** A requests-per-hour policy on this run's metadata (an hour: no window boundary inside a test). */
  const policy = (value: number, run: string) =>
    admin('POST', '/policies/rate-limits', { name: `${run} ${value}/h`, type: 'requests', unit: 'rph', value, conditions: [{ key: 'metadata.run', value: run }] });
  return { admin, chat, burst, policy };
}

const count = (answers: Array<{ status: number }>, status: number) => answers.filter((a) => a.status === status).length;

describe('Redis Cluster: three primaries, three replicas, three gateway processes', async () => {
  const available = requireRedisBinaries() && (await requireService('PostgreSQL', DATABASE_URL));
  let cluster: RedisClusterHandle;
  let fleet: Fleet | undefined;
  let mock: MockUpstream;
  const api = client(() => fleet!, () => mock);

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    cluster = await startRedisCluster(3);
    fleet = await startFleet(cluster.url, 'cluster');
    // Before any request: an instance reads a workspace's policies once per control-plane cache period (10 s).
    await api.policy(100, 'cluster-exact');
    await api.policy(60, 'cluster-failover');
  }, 120_000);
  afterAll(async () => {
    await stopFleet(fleet);
    await mock?.close();
    await cluster?.close();
  });

  test('limits are exact across the three: 300 concurrent against 100 an hour, exactly 100 pass', async (ctx) => {
    if (!available) ctx.skip();
    const answers = await api.burst(300, 60, 'cluster-exact');
    expect([count(answers, 200), count(answers, 429)]).toEqual([100, 200]);
  }, 120_000);

  test('the primary holding the limits is killed under load: no 5xx, no count forgotten, exact after the promotion', async (ctx) => {
    if (!available) ctx.skip();
    const before = await api.burst(30, 10, 'cluster-failover');
    expect(count(before, 200)).toBe(30);
    // The slot of every limit key ({limits}): its primary goes down, its replica takes over.
    const victim = cluster.primaryOf(`${fleet!.prefix}{limits}`);
    const killed = cluster.kill(victim);
    const during = await api.burst(60, 10, 'cluster-failover');
    await killed;
    const seen = `the slowest request took ${Math.round(Math.max(...during.map((a) => a.ms)))} ms`;
    console.info(`cluster failover: ${seen}`);
    // Every request waited out the failover: none failed, and the 30 counts made before it were on the replica.
    expect(during.filter((a) => a.status >= 500)).toEqual([]);
    expect([count(during, 200), count(during, 429)], seen).toEqual([30, 30]);
    expect(cluster.primaries()).not.toContain(victim);
    // The node comes back as a replica; the cluster is whole again.
    await cluster.restart(victim);
    await cluster.healthy();
  }, 120_000);

  test('every script keeps its keys on one slot: limits across buckets, the breaker\'s two keys, routing reads; the cache spreads', async (ctx) => {
    if (!available) ctx.skip();
    const redis = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })), { scaleReads: 'master' });
    try {
      const connection = redisConnection(redis, uniquePrefix('slots').replace(/[{}]/g, ''), true, { replicas: 1, timeoutMs: 500 });
      const limits = redisLimitStore(connection);
      const now = Date.now();
      const items = ['a', 'b', 'c'].map((bucket) => ({ bucket, group: '', amount: 1, limit: 5, reserve: false, expireAt: now + 60_000 }));
      expect((await limits.check(items, 'r1', now, now + 1000)).denied).toBe(-1);
      expect((await limits.read('b', now))[0]).toMatchObject({ used: 1 });
      const breaker = redisBreakerState(connection);
      await breaker.failure('target-x', 1, now, false);
      expect((await breaker.admit('target-x', 60_000, now)).state).toBe('open');
      const routing = redisRouteState(connection);
      await routing.record('t1', null, 120, null);
      await routing.record('t2', null, 80, null);
      expect((await routing.read(['t1', 't2', 't3'])).map((s) => s === null)).toEqual([false, false, true]);
      // The cache's keys are single keys: answers and semantic candidates, spread over the primaries.
      const cache = redisCacheStore(() => connection, createLogger({ level: 'silent' }));
      const answer = { v: 1 as const, route: 'chat.completions', status: 200, body: '{"ok":true}', usage: null, fromStream: false, createdAt: now, expiresAt: now + 60_000 };
      await cache.set('k1', answer, 60_000);
      expect(await cache.get('k1')).toMatchObject({ body: '{"ok":true}' });
      await cache.addCandidate('scope-a', { key: 'k1', vector: new Float32Array([0.5, 0.5]), createdAt: now, expiresAt: now + 60_000 }, 10, 60_000);
      expect((await cache.candidates('scope-a', 10)).map((c) => c.key)).toEqual(['k1']);
    } finally {
      await redis.quit();
    }
  }, 60_000);
});

describe('Redis Sentinel: a primary and a replica behind three Sentinels, three gateway processes', async () => {
  const available = requireRedisBinaries() && (await requireService('PostgreSQL', DATABASE_URL));
  let sentinel: RedisSentinelHandle;
  let fleet: Fleet | undefined;
  let mock: MockUpstream;
  const api = client(() => fleet!, () => mock);

  beforeAll(async () => {
    if (!available) return;
    mock = await startMockOpenAI();
    sentinel = await startRedisSentinel();
    fleet = await startFleet(sentinel.url, 'sentinel');
    await api.policy(100, 'sentinel-exact');
    await api.policy(60, 'sentinel-failover');
  }, 120_000);
  afterAll(async () => {
    await stopFleet(fleet);
    await mock?.close();
    await sentinel?.close();
  });

  test('limits are exact across the three', async (ctx) => {
    if (!available) ctx.skip();
    const answers = await api.burst(300, 60, 'sentinel-exact');
    expect([count(answers, 200), count(answers, 429)]).toEqual([100, 200]);
  }, 120_000);

  test('the primary is killed under load: the Sentinels promote the replica, no 5xx, no count forgotten', async (ctx) => {
    if (!available) ctx.skip();
    const first = sentinel.primary();
    expect(count(await api.burst(30, 10, 'sentinel-failover'), 200)).toBe(30);
    const failover = sentinel.failover();
    const during = await api.burst(60, 10, 'sentinel-failover');
    const { from, to, ms } = await failover;
    // Said before the counts are checked, so a failure tells whether the failover was slow or came twice.
    const seen = `the primary was ${first} at the start, ${from} when killed, ${to} after; promoted in ${ms} ms; the slowest request took ${Math.round(Math.max(...during.map((a) => a.ms)))} ms`;
    console.info(`sentinel failover: ${seen}`);
    expect(to).not.toBe(from);
    expect(during.filter((a) => a.status >= 500)).toEqual([]);
    expect([count(during, 200), count(during, 429)], seen).toEqual([30, 30]);
  }, 120_000);
});
