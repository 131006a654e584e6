import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSemantic } from '../../../plugins/cache/semantic/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { cacheRedis, decodeCandidate, encodeCandidate } from '../../../plugins/cache/stores/redis/index.js';
import { config } from '../../../plugins/config/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { requestLog } from '../../../plugins/request-log/index.js';
import { redisStore } from '../../../plugins/stores/redis/index.js';
import { serveGateway } from '../../helpers/serve.js';
import { REDIS_URL, requireService, uniquePrefix } from '../../helpers/services.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { post, startMockEmbeddings, until, type MockEmbeddings } from './helpers.js';

let mock: MockUpstream;
let emb: MockEmbeddings;
beforeAll(async () => {
  mock = await startMockOpenAI();
  emb = await startMockEmbeddings();
});
afterAll(async () => {
  await mock.close();
  await emb.close();
});

const MAX_CANDIDATES = 3;

/** One gateway instance: its own Redis connection (the `redis` store plugin) to the given URL and prefix. */
function instance(url: string, prefix: string, options: { now?: () => number } = {}) {
  return serveGateway({
    plugins: [
      config(),
      openai(),
      redisStore({ url, keyPrefix: prefix }),
      cacheRedis({ warnIntervalMs: 60_000, ...(options.now ? { now: options.now } : {}) }),
      cache({ store: 'redis' }),
      cacheSimple(),
      cacheSemantic({ embedding: { target: { provider: 'openai', api_key: 'sk-embed', custom_host: emb.baseURL }, model: 'bow' }, maxCandidates: MAX_CANDIDATES }),
      requestLog(),
    ],
  });
}

const cfg = (mode: string) => JSON.stringify({ provider: 'openai', api_key: 'sk-redis', custom_host: mock.baseURL, cache: { mode, max_age: 120 } });
const ask = (content: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

describe('Redis store shared by two gateway instances', async () => {
  const available = await requireService('Redis', REDIS_URL);
  const prefix = uniquePrefix('cache');
  let a: Awaited<ReturnType<typeof instance>>;
  let b: Awaited<ReturnType<typeof instance>>;
  let redis: Redis;

  beforeAll(async () => {
    if (!available) return;
    a = await instance(REDIS_URL, prefix);
    b = await instance(REDIS_URL, prefix);
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    if (!available) return;
    await a.close();
    await b.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  /** Sends through `gw` and waits until Redis holds `count` more entries under the prefix. */
  const storedVia = async (gw: typeof a, body: unknown, mode: string) => {
    const before = (await redis.keys(`${prefix}cache:e:*`)).length;
    const r = await post(gw.url, '/v1/chat/completions', body, { 'x-gateway-config': cfg(mode) });
    expect(r.status).toBe(200);
    expect(r.cacheStatus).toBe('MISS');
    await until(async () => (await redis.keys(`${prefix}cache:e:*`)).length > before);
    return r;
  };

  test.skipIf(!available)('an answer stored by one instance is a hit on the other, with its TTL set in Redis', async () => {
    const first = await storedVia(a, ask('shared across instances'), 'simple');
    const before = mock.requests.length;
    const hit = await post(b.url, '/v1/chat/completions', ask('shared across instances'), { 'x-gateway-config': cfg('simple') });
    expect(hit.cacheStatus).toBe('HIT');
    expect(hit.text).toBe(first.text);
    expect(mock.requests.length).toBe(before);

    const [key] = await redis.keys(`${prefix}cache:e:*`);
    const ttl = await redis.pttl(key!);
    expect(ttl).toBeGreaterThan(100_000);
    expect(ttl).toBeLessThanOrEqual(120_000);
    // The entry holds no credential.
    expect(await redis.get(key!)).not.toContain('sk-redis');
  });

  test.skipIf(!available)('semantic vectors are shared too; each scope keeps a capped candidate list', async () => {
    await storedVia(a, ask('What is the capital of France?'), 'semantic');
    await until(async () => (await redis.keys(`${prefix}cache:v:*`)).length > 0);
    const before = mock.requests.length;
    const hit = await post(b.url, '/v1/chat/completions', ask('what is the capital of FRANCE'), { 'x-gateway-config': cfg('semantic') });
    expect(hit.cacheStatus).toBe('SEMANTIC HIT');
    expect(mock.requests.length).toBe(before);

    const [scope] = await redis.keys(`${prefix}cache:v:*`);
    for (const q of ['alpha beta', 'gamma delta', 'epsilon zeta', 'eta theta']) {
      const head = await redis.lindex(scope!, 0);
      await post(a.url, '/v1/chat/completions', ask(q), { 'x-gateway-config': cfg('semantic') });
      await until(async () => (await redis.lindex(scope!, 0)) !== head);
    }
    await until(async () => (await redis.llen(scope!)) === MAX_CANDIDATES);
    expect(await redis.pttl(scope!)).toBeGreaterThan(0);
    // The oldest (France) fell out of the list: its entry is still an exact HIT, but no longer found by meaning.
    expect((await post(b.url, '/v1/chat/completions', ask('What is the capital of France?'), { 'x-gateway-config': cfg('semantic') })).cacheStatus).toBe('HIT');
    expect((await post(b.url, '/v1/chat/completions', ask('france capital is what the of'), { 'x-gateway-config': cfg('semantic') })).cacheStatus).toBe('MISS');
  });
});

describe('Redis outage', () => {
  test('a store on a closed port: every request is a 200 MISS, and one warning per interval', async () => {
    let clock = 5_000_000;
    const down = await instance('redis://127.0.0.1:1', 'unused:', { now: () => clock });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await post(down.url, '/v1/chat/completions', ask(`outage ${i % 2}`), { 'x-gateway-config': cfg(i === 2 ? 'semantic' : 'simple') });
        expect(r.status).toBe(200);
        expect(r.cacheStatus).toBe('MISS');
        expect(r.json().choices[0].message.content).toBe('Hello from the mock!');
      }
      await new Promise((r) => setTimeout(r, 100));
      const warnings = () => down.logs.lines().filter((l) => l.msg === 'cache store redis unavailable; cache reads are misses and writes are dropped');
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]!.level).toBe(40);
      // The store degraded quietly: nothing reached the cache plugin as a failure.
      expect(down.logs.lines().filter((l) => l.msg === 'cache lookup or save failed; treated as a miss')).toHaveLength(0);
      clock += 61_000;
      expect((await post(down.url, '/v1/chat/completions', ask('outage later'), { 'x-gateway-config': cfg('simple') })).status).toBe(200);
      await until(() => warnings().length === 2);
    } finally {
      await down.close();
    }
  });
});

describe('candidate encoding (unit)', () => {
  test('round trip', () => {
    const c = { key: 'ab'.repeat(32), vector: new Float32Array([0.5, -0.25, 1e-3]), createdAt: 1, expiresAt: 2 };
    const back = decodeCandidate(encodeCandidate(c))!;
    expect(back.key).toBe(c.key);
    expect([...back.vector]).toEqual([...c.vector]);
    expect(back).toMatchObject({ createdAt: 1, expiresAt: 2 });
    expect(decodeCandidate('garbage')).toBeNull();
  });
});
