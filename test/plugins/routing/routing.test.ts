import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG, defaultConfig } from '../../../server/default-config.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { DATABASE_URL, dropSchema, REDIS_URL, requireService, uniquePrefix, uniqueSchema, clearRedisPrefix } from '../../helpers/services.js';
import { startQuotaUpstream } from '../../mocks/quota-upstream.js';
import { goDurationMs, headroomOf } from '../../../plugins/routing/headers.js';
import { rendezvous } from '../../../plugins/routing/choose.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;

async function chat(gw: Server, config: Record<string, unknown>, content: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const started = performance.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config), ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra }),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), ms: performance.now() - started, headers: res.headers };
}

const leaf = (host: string, extra: Record<string, unknown> = {}) => ({ provider: 'openai', api_key: 'sk-routing', custom_host: host, ...extra });

describe('rate-limit headers', () => {
  test("OpenAI's durations, Anthropic's times, retry-after", () => {
    expect(goDurationMs('6m0s')).toBe(360_000);
    expect(goDurationMs('12ms')).toBe(12);
    expect(goDurationMs('1h2m3.5s')).toBe(3_723_500);
    expect(goDurationMs('soon')).toBeUndefined();
    const now = Date.parse('2026-11-28T10:00:00Z');
    expect(headroomOf(200, { 'x-ratelimit-remaining-tokens': '900', 'x-ratelimit-reset-tokens': '1s', 'x-ratelimit-remaining-requests': '-1' }, now)).toEqual({ tokensLeft: 900, tokensResetAt: now + 1000 });
    expect(
      headroomOf(200, { 'anthropic-ratelimit-tokens-remaining': '5000', 'anthropic-ratelimit-input-tokens-remaining': '800', 'anthropic-ratelimit-tokens-reset': '2026-11-28T10:01:00Z' }, now),
    ).toEqual({ tokensLeft: 800, tokensResetAt: now + 60_000 });
    expect(headroomOf(429, { 'retry-after': '7' }, now)).toEqual({ retryAt: now + 7000 });
    expect(headroomOf(429, { 'retry-after-ms': '250' }, now)).toEqual({ retryAt: now + 250 });
    expect(headroomOf(200, {}, now)).toBeNull();
  });

  test('rendezvous: a session keeps its target, and only the sessions of a target that is out move', () => {
    const ids = ['a', 'b', 'c'];
    const first = Array.from({ length: 300 }, (_, i) => rendezvous(`s${i}`, ids, [1, 1, 1]));
    const shares = [0, 0, 0];
    for (const r of first) shares[r[0]!]!++;
    for (const s of shares) expect(s).toBeGreaterThan(70);
    // Weights shift the shares.
    const weighted = Array.from({ length: 300 }, (_, i) => rendezvous(`s${i}`, ids, [3, 1, 0])[0]);
    expect(weighted.filter((x) => x === 0).length).toBeGreaterThan(180);
    expect(weighted.includes(2)).toBe(false);
  });
});

describe('quota headroom, one instance', () => {
  let gw: Server;
  let up: Awaited<ReturnType<typeof startQuotaUpstream>>;
  beforeAll(async () => {
    up = await startQuotaUpstream(['a', 'b'], { a: 600, b: 100_000 });
    gw = await startTestServer({ config: DEFAULT_CONFIG });
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  test('a loadbalance moves traffic off the target whose remaining tokens fall below the request\'s estimate: no 429 reaches the client', async () => {
    const config = { strategy: { mode: 'loadbalance' }, targets: [leaf(up.host('a')), leaf(up.host('b'))] };
    const statuses: number[] = [];
    // Each request costs 1 token of prompt and 50 of max_tokens: a's 600 take 11 of them.
    for (let i = 0; i < 40; i++) statuses.push((await chat(gw, config, 'go!', { max_tokens: 50 })).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(up.targets.get('a')!.refused).toBe(0);
    expect(up.targets.get('a')!.served).toBeGreaterThan(0);
    expect(up.targets.get('a')!.tokensLeft).toBeLessThan(51);
    // And with every target out, a 429 that says when the earliest resets, without calling either.
    const tight = { strategy: { mode: 'loadbalance' }, targets: [leaf(up.host('a'))] };
    const before = up.targets.get('a')!.served + up.targets.get('a')!.refused;
    const out = await chat(gw, tight, 'go!', { max_tokens: 50 });
    expect(out.status).toBe(429);
    expect(out.body.error.code).toBe('targets_exhausted');
    expect(Number(out.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(up.targets.get('a')!.served + up.targets.get('a')!.refused).toBe(before);
    // The decision is in the request's log line.
    const line = gw.logs.lines().filter((l) => l.msg === 'request' && Array.isArray(l.routing)).at(-1)!;
    expect(line.routing[0]).toMatchObject({ mode: 'loadbalance', considered: ['0'], skipped: [{ target: '0', reason: 'tokens_exhausted' }], chosen: [] });
    // And in the stored log entry's detail.
    const admin = (path: string) => fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } }).then((r) => r.json() as Promise<Record<string, any>>);
    let listed: Record<string, any> | undefined;
    await expect.poll(async () => (listed = (await admin(`/v1/logs?trace_id=${line.trace_id}`)).data[0]) !== undefined).toBe(true);
    const entry = await admin(`/v1/logs/${listed!.id}`);
    expect(entry.error_code).toBe('targets_exhausted');
    expect(entry.routing).toEqual(line.routing);
  });

  test('fallback skips a target that is out and goes to the next, without calling it', async () => {
    const config = { strategy: { mode: 'fallback' }, targets: [leaf(up.host('a')), leaf(up.host('b'))] };
    const a = up.targets.get('a')!;
    const before = a.served + a.refused;
    const r = await chat(gw, config, 'go!', { max_tokens: 50 });
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.content).toBe('from b');
    expect(a.served + a.refused).toBe(before);
  });
});

describe('a target whose budget is spent', () => {
  let gw: Server;
  let up: Awaited<ReturnType<typeof startQuotaUpstream>>;
  // A budget for one provider of the loadbalance only: checked when that target is called, and asked by routing before.
  const budgets = [
    { id: 'openai-budget', type: 'tokens', credit_limit: 250, conditions: [{ key: 'provider', value: 'openai' }] },
    { id: 'fw-small', type: 'tokens', credit_limit: 5, conditions: [{ key: 'provider', value: 'fireworks-ai' }, { key: 'metadata.case', value: 'both' }] },
    { id: 'fw-fail', type: 'tokens', credit_limit: 250, conditions: [{ key: 'provider', value: 'fireworks-ai' }, { key: 'metadata.case', value: 'fail' }] },
  ];
  beforeAll(async () => {
    up = await startQuotaUpstream(['a', 'b', 'c', 'd', 'e']);
    up.set('e', { status: 500 });
    const plugins = DEFAULT_CONFIG.plugins.map((p) => (p.name === 'limits' ? { name: 'limits', options: { usageLimits: budgets } } : p));
    gw = await startTestServer({ config: { ...DEFAULT_CONFIG, plugins } });
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });
  // 400 characters: 100 prompt tokens, as the gateway estimates and the mock counts; with max_tokens 10 the estimate is about 110, the real use 102.
  const long = 'word '.repeat(80);
  const fw = (host: string) => ({ provider: 'fireworks-ai', api_key: 'fw-routing', custom_host: host });
  const meta = (value: string) => ({ 'x-gateway-metadata': JSON.stringify({ case: value }) });

  test('a loadbalance skips the target whose budget is spent, before calling it: no 429 reaches the client', async () => {
    const config = { strategy: { mode: 'loadbalance' }, targets: [leaf(up.host('a'), { weight: 3 }), fw(up.host('b'))] };
    const bodies: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await chat(gw, config, long, { max_tokens: 10 });
      if (r.status !== 200) bodies.push(r.body);
    }
    expect(bodies).toEqual([]);
    // 250 tokens take two answers of 102 (a third's estimate no longer fits); b took the rest, a was never refused.
    expect(up.targets.get('a')!.served).toBe(2);
    expect(up.targets.get('a')!.refused).toBe(0);
    expect(up.targets.get('b')!.served).toBe(18);
    const line = gw.logs.lines().filter((l) => l.msg === 'request' && Array.isArray(l.routing)).at(-1)!;
    // The budget never resets: no time it is out until.
    expect(line.routing[0]).toMatchObject({ considered: ['0', '1'], skipped: [{ target: '0', reason: 'budget_spent', policy: 'openai-budget' }], chosen: ['1'] });
    expect(line.routing[0].skipped[0].until).toBeUndefined();
    expect(line.limit_policy_id).toBeUndefined();

    // A fallback goes past it to the next target without calling it.
    const before = up.targets.get('a')!.served + up.targets.get('a')!.refused;
    const r = await chat(gw, { strategy: { mode: 'fallback' }, targets: [leaf(up.host('a')), fw(up.host('b'))] }, long, { max_tokens: 10 });
    expect([r.status, r.body.choices[0].message.content]).toEqual([200, 'from b']);
    expect(up.targets.get('a')!.served + up.targets.get('a')!.refused).toBe(before);

    // Every target's budget spent: a 429 naming them; neither resets by itself, so no retry-after.
    const out = await chat(gw, config, long, { max_tokens: 10 }, meta('both'));
    expect(out.status).toBe(429);
    expect(out.body.error.code).toBe('targets_exhausted');
    expect(out.body.error.message).toContain('policy openai-budget');
    expect(out.body.error.message).toContain('policy fw-small');
    expect(out.headers.get('retry-after')).toBeNull();
  });

  test('without the routing plugin, a target refused at its call hands over like a failed one; the log names the policy only when the refusal is the answer', async () => {
    const plugins = DEFAULT_CONFIG.plugins.filter((p) => p.name !== 'routing').map((p) => (p.name === 'limits' ? { name: 'limits', options: { usageLimits: [{ ...budgets[0]!, id: 'solo-budget', credit_limit: 1 }] } } : p));
    const solo = await startTestServer({ config: { ...DEFAULT_CONFIG, plugins } });
    try {
      const before = up.targets.get('a')!.served;
      const passed = await chat(solo, { strategy: { mode: 'fallback' }, targets: [leaf(up.host('a')), fw(up.host('b'))] }, long, { max_tokens: 10 });
      expect([passed.status, passed.body.choices[0].message.content]).toEqual([200, 'from b']);
      const passedLine = solo.logs.lines().filter((l) => l.msg === 'request').at(-1)!;
      expect(passedLine.limit_policy_id).toBeUndefined();
      // The refused target last: its refusal is the answer, and the log says whose.
      const refused = await chat(solo, { strategy: { mode: 'fallback' }, targets: [fw(up.host('e')), leaf(up.host('a'))] }, long, { max_tokens: 10 });
      expect([refused.status, refused.body.error.code]).toEqual([429, 'usage_limit_exceeded']);
      expect(refused.body.error.message).toContain('solo-budget');
      const refusedLine = solo.logs.lines().filter((l) => l.msg === 'request').at(-1)!;
      expect(refusedLine.limit_policy_id).toBe('solo-budget');
      expect(up.targets.get('a')!.served).toBe(before);
    } finally {
      await solo.close();
    }
  });

  test('a target tried and failed gives its reservation back: its budget is charged only for the answers it gave', async () => {
    up.set('c', { status: 500 });
    const config = { strategy: { mode: 'fallback' }, targets: [fw(up.host('c')), { provider: 'together-ai', api_key: 'tg', custom_host: up.host('d') }] };
    // Five fallbacks from c to d: had d's 102 tokens each been charged to c's budget of 250, it would be spent after two.
    for (let i = 0; i < 5; i++) {
      const r = await chat(gw, config, long, { max_tokens: 10 }, meta('fail'));
      expect([r.status, r.body.choices[0].message.content]).toEqual([200, 'from d']);
    }
    up.set('c', { status: 200 });
    const r = await chat(gw, config, long, { max_tokens: 10 }, meta('fail'));
    expect([r.status, r.body.choices[0].message.content]).toEqual([200, 'from c']);
    // Two answers of c spend it; the third goes to d, c not called.
    await chat(gw, config, long, { max_tokens: 10 }, meta('fail'));
    const third = await chat(gw, config, long, { max_tokens: 10 }, meta('fail'));
    expect([third.status, third.body.choices[0].message.content]).toEqual([200, 'from d']);
    expect(up.targets.get('c')!.served).toBe(2);
  });
});

describe('latency and affinity', () => {
  let gw: Server;
  let up: Awaited<ReturnType<typeof startQuotaUpstream>>;
  beforeAll(async () => {
    up = await startQuotaUpstream(['x', 'y', 'z', 'slow', 'fast']);
    gw = await startTestServer({ config: DEFAULT_CONFIG });
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  test('affinity by prompt prefix: 100 requests of 20 conversations over three targets, each conversation on one target, its cache hit on every later turn', async () => {
    const config = { strategy: { mode: 'loadbalance' }, routing: { affinity: { key: 'prefix' } }, targets: [leaf(up.host('x')), leaf(up.host('y')), leaf(up.host('z'))] };
    let cached = 0;
    let cachedTokens = 0;
    for (let turn = 0; turn < 5; turn++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, c) => {
          const messages = [{ role: 'user', content: `conversation ${c}: tell me about ${c * 7}` }];
          for (let k = 0; k < turn; k++) messages.push({ role: 'assistant', content: 'sure' }, { role: 'user', content: `more ${k}` });
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config) },
            body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
          });
          return (await res.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
        }),
      );
      cached += answers.filter((a) => a.usage.prompt_tokens_details.cached_tokens > 0).length;
      for (const a of answers) cachedTokens += a.usage.prompt_tokens_details.cached_tokens;
    }
    // Every conversation stayed on one target...
    for (let c = 0; c < 20; c++) {
      const key = `conversation ${c}: tell me about ${c * 7}`;
      const on = ['x', 'y', 'z'].filter((n) => up.targets.get(n)!.conversations.has(key));
      expect(on, key).toHaveLength(1);
    }
    // ...so every turn after the first hit the provider's cache; and the three targets shared the conversations.
    expect(cached).toBe(80);
    for (const n of ['x', 'y', 'z']) expect(up.targets.get(n)!.served).toBeGreaterThan(0);
    // The cached input tokens, per provider and model, in the analytics routes and /metrics.
    const admin = (path: string) => fetch(`${gw.url}${path}`, { headers: { 'x-gateway-api-key': BOOTSTRAP_KEY } });
    await expect
      .poll(async () => ((await (await admin('/v1/analytics/groups/model?columns=cached_tokens')).json()) as { data: Array<{ model: string; cached_tokens: number }> }).data, { timeout: 5000 })
      .toContainEqual({ model: 'gpt-4o-mini', requests: 100, cached_tokens: cachedTokens });
    const series = (await (await admin(`/v1/analytics/timeseries?from=${new Date(Date.now() - 3_600_000).toISOString()}&interval=hour`)).json()) as { totals: { cached_tokens: number } };
    expect(series.totals.cached_tokens).toBe(cachedTokens);
    const metrics = await (await admin('/metrics')).text();
    expect(metrics).toMatch(new RegExp(`gateway_tokens_total\\{[^}]*kind="cached"[^}]*\\} ${cachedTokens}\\b`));
  });

  test('prefer latency: once measured, the fast target takes nearly all the traffic', async () => {
    up.set('slow', { delayMs: 120 });
    const config = { strategy: { mode: 'loadbalance' }, routing: { prefer: 'latency' }, targets: [leaf(up.host('slow')), leaf(up.host('fast'))] };
    for (let i = 0; i < 10; i++) await chat(gw, config, `warm ${i}`);
    const slowBefore = up.targets.get('slow')!.served;
    for (let i = 0; i < 30; i++) expect((await chat(gw, config, `q ${i}`)).status).toBe(200);
    expect(up.targets.get('slow')!.served - slowBefore).toBeLessThanOrEqual(2);
  });
});

describe('one deadline per request', () => {
  let gw: Server;
  let up: Awaited<ReturnType<typeof startQuotaUpstream>>;
  beforeAll(async () => {
    up = await startQuotaUpstream(['s1', 's2', 's3']);
    for (const n of ['s1', 's2', 's3']) up.set(n, { delayMs: 450, status: 503 });
    gw = await startTestServer({ config: DEFAULT_CONFIG });
    // The client's first request sets up its connection and the gateway's first chat request warms its path: not what is timed.
    await chat(gw, leaf(up.host('s1')), 'warm', {}, { 'x-gateway-deadline': '20' });
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  test('a 2 s deadline over retry x3 and two fallbacks of a slow target ends at 2 s with a clear 408; no attempt starts after it', async () => {
    const retry = { attempts: 3 };
    const config = { deadline: 2000, strategy: { mode: 'fallback' }, targets: [leaf(up.host('s1'), { retry }), leaf(up.host('s2'), { retry }), leaf(up.host('s3'), { retry })] };
    const started = performance.now();
    const r = await chat(gw, config, 'hurry');
    expect(r.status).toBe(408);
    expect(r.body.error.code).toBe('deadline_exceeded');
    expect(r.body.error.message).toMatch(/deadline of 2000 ms passed after \d+ ms: \d+ upstream attempts? took \d+ ms/);
    expect(Math.abs(r.ms - 2000)).toBeLessThanOrEqual(100);
    const arrivals = ['s1', 's2', 's3'].flatMap((n) => up.targets.get(n)!.arrivals);
    expect(arrivals.length).toBeGreaterThan(1);
    for (const at of arrivals) expect(at - started).toBeLessThan(2000);
  });

  test('x-gateway-deadline sets it per request; a bad one is a 400', async () => {
    // The target takes 450 ms: the first attempt is cut at the deadline.
    const r = await chat(gw, { ...leaf(up.host('s1')), retry: { attempts: 5 } }, 'hurry', {}, { 'x-gateway-deadline': '300' });
    expect(r.status).toBe(408);
    expect(r.body.error.code).toBe('deadline_exceeded');
    expect(Math.abs(r.ms - 300)).toBeLessThanOrEqual(150);
    const bad = await chat(gw, leaf(up.host('s1')), 'x', {}, { 'x-gateway-deadline': 'soon' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('x-gateway-deadline');
  });
});

const prefix = uniquePrefix('routing');
const schema = uniqueSchema('routing');
describe('quota headroom across three instances sharing Redis and PostgreSQL', () => {
  const gws: Server[] = [];
  let up: Awaited<ReturnType<typeof startQuotaUpstream>>;
  beforeAll(async () => {
    if (!(await requireService('Redis', REDIS_URL)) || !(await requireService('PostgreSQL', DATABASE_URL))) return;
    up = await startQuotaUpstream(['a', 'b'], { a: 600, b: 100_000 });
    // The default config for REDIS_URL and DATABASE_URL: the routing state (with the limits, the breaker and the cache) in
    // Redis, the workspaces in PostgreSQL. What is known of a target is known per workspace (docs/security.md): the
    // replicas of one deployment share their workspaces, and so what they learn.
    const config = defaultConfig({ redisUrl: REDIS_URL, databaseUrl: DATABASE_URL });
    const env = { REDIS_URL, DATABASE_URL, GATEWAY_REDIS_PREFIX: prefix, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) };
    for (let i = 0; i < 3; i++) gws.push(await startTestServer({ config, env }));
  });
  afterAll(async () => {
    await Promise.all(gws.map((g) => g.close()));
    await up?.close();
    if (gws.length === 0) return;
    await clearRedisPrefix(prefix);
    await dropSchema(schema);
  });

  test('what one instance learns of a target\'s headroom the others use: no 429 reaches a client', async (ctx) => {
    if (gws.length === 0) ctx.skip();
    const config = { strategy: { mode: 'loadbalance' }, targets: [leaf(up.host('a')), leaf(up.host('b'))] };
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    for (let i = 0; i < 45; i++) {
      const r = await chat(gws[i % 3]!, config, 'go!', { max_tokens: 50 });
      statuses.push(r.status);
      if (r.status !== 200) bodies.push(r.body);
    }
    expect(bodies).toEqual([]);
    expect(up.targets.get('a')!.refused).toBe(0);
    expect(up.targets.get('a')!.served).toBeGreaterThan(0);
    expect(up.targets.get('b')!.served).toBeGreaterThan(up.targets.get('a')!.served);
    // The instances shared what they learned: those that never called the target while it ran out still skipped it.
    const skippedBy = gws.map((g) => g.logs.lines().some((l) => l.msg === 'request' && Array.isArray(l.routing) && l.routing[0].skipped.length > 0));
    expect(skippedBy).toEqual([true, true, true]);
  });
});
