import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { bundledPricing } from '../../../sdk/index.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { ADMIN, chat, eventually, limitHeadersOf, limitsGateway, type Json, type LimitsGateway } from './helpers.js';

/** Wednesday 2026-03-11, 10:00:15 UTC. */
const START = Date.parse('2026-03-11T10:00:15Z');
const clock = { now: START };
let mock: MockUpstream;
let gw: LimitsGateway;
const ids: Json = {};
const keys: Record<string, string> = {};

beforeAll(async () => {
  mock = await startMockOpenAI();
  gw = await limitsGateway({ clock });
  // Each test has its own workspace, so policies of one never limit another's requests.
  for (const ws of ['basic', 'groups', 'archive', 'cache', 'guard', 'resets', 'cost', 'tokens', 'unpriced', 'keep']) {
    ids[ws] = (await gw.admin('POST', '/workspaces', { name: ws, slug: ws })).id;
    keys[ws] = (await gw.admin('POST', '/api-keys', { type: 'workspace-service', name: ws, workspace_id: ids[ws], scopes: ['completions.write', 'policies.*', 'logs.read'] })).key;
  }
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});
afterEach(() => {
  clock.now = START;
});

const policy = (ws: string, body: Json) => gw.admin('POST', '/policies/rate-limits', body, keys[ws]);
const budget = (ws: string, body: Json) => gw.admin('POST', '/policies/usage-limits', body, keys[ws]);
const send = (ws: string, options: Parameters<typeof chat>[2] = {}) => chat(gw, mock.baseURL, { key: keys[ws], ...options });
const usageOf = (kind: 'rate-limits' | 'usage-limits', id: string, ws: string) => gw.admin('GET', `/policies/${kind}/${id}/usage`, undefined, keys[ws]);

describe('request limits', () => {
  test('requests pass up to the limit, then 429 rate_limit_exceeded with retry-after, the headers and the policy id, in the log entry and the metric', async () => {
    const p = await policy('basic', { name: 'three a minute', type: 'requests', unit: 'rpm', value: 3 });
    const first = await send('basic');
    expect(first.status).toBe(200);
    // 10:00:15 → the window ends at 10:01:00.
    expect(limitHeadersOf(first.headers)).toEqual({ 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '2', 'x-ratelimit-reset-requests': '45' });
    expect((await send('basic')).headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect((await send('basic')).headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const before = mock.requests.length;
    const refused = await send('basic');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(refused.body.error.message).toContain(p.id);
    expect(refused.body.error.message).toContain('allows 3 requests per minute');
    expect(limitHeadersOf(refused.headers)).toEqual({ 'retry-after': '45', 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '45' });
    expect(mock.requests.length).toBe(before);

    const entry = await eventually(async () => {
      const list = await gw.admin('GET', `/logs?limit_policy_id=${p.id}`, undefined, keys.basic);
      expect(list.data).toHaveLength(1);
      return list.data[0];
    });
    expect(entry).toMatchObject({ status: 429, error_code: 'rate_limit_exceeded', limit_policy_id: p.id });
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': ADMIN } })).text();
    expect(text).toMatch(/gateway_limit_rejections_total\{code="rate_limit_exceeded"\} [1-9]/);

    // The next window starts afresh.
    clock.now = Date.parse('2026-03-11T10:01:00Z');
    const next = await send('basic');
    expect([next.status, next.headers.get('x-ratelimit-remaining-requests'), next.headers.get('x-ratelimit-reset-requests')]).toEqual([200, '2', '60']);
  });

  test('conditions and group_by: two keys, two metadata values and two models each get their own bucket; other requests are not limited', async () => {
    const second = (await gw.admin('POST', '/api-keys', { type: 'workspace-service', name: 'groups 2', workspace_id: ids.groups, scopes: ['completions.write'] })).key;
    await policy('groups', { name: 'per key', type: 'requests', unit: 'rph', value: 1, group_by: [{ key: 'api_key' }], conditions: [{ key: 'metadata.case', value: 'keys' }] });
    await policy('groups', { name: 'per team', type: 'requests', unit: 'rph', value: 1, group_by: [{ key: 'metadata.team' }], conditions: [{ key: 'metadata.case', value: 'teams' }] });
    await policy('groups', { name: 'per model', type: 'requests', unit: 'rph', value: 1, group_by: [{ key: 'model' }], conditions: [{ key: 'metadata.case', value: 'models' }, { key: 'endpoint_type', value: 'chat' }] });
    const meta = (m: Json) => ({ 'x-gateway-metadata': JSON.stringify(m) });
    const statuses = async (sends: Array<() => Promise<{ status: number }>>) => {
      const out: number[] = [];
      for (const s of sends) out.push((await s()).status);
      return out;
    };

    expect(await statuses([
      () => send('groups', { headers: meta({ case: 'keys' }) }),
      () => send('groups', { headers: meta({ case: 'keys' }) }),
      () => chat(gw, mock.baseURL, { key: second, headers: meta({ case: 'keys' }) }),
      () => chat(gw, mock.baseURL, { key: second, headers: meta({ case: 'keys' }) }),
    ])).toEqual([200, 429, 200, 429]);

    expect(await statuses([
      () => send('groups', { headers: meta({ case: 'teams', team: 'blue' }) }),
      () => send('groups', { headers: meta({ case: 'teams', team: 'blue' }) }),
      () => send('groups', { headers: meta({ case: 'teams', team: 'red' }) }),
      () => send('groups', { headers: meta({ case: 'teams', team: 'red' }) }),
    ])).toEqual([200, 429, 200, 429]);

    expect(await statuses([
      () => send('groups', { headers: meta({ case: 'models' }), body: { model: 'gpt-4o-mini' } }),
      () => send('groups', { headers: meta({ case: 'models' }), body: { model: 'gpt-4o-mini' } }),
      () => send('groups', { headers: meta({ case: 'models' }), body: { model: 'gpt-4o' } }),
      () => send('groups', { headers: meta({ case: 'models' }), body: { model: 'gpt-4o' } }),
    ])).toEqual([200, 429, 200, 429]);

    // No condition matches: no policy applies, and no header says otherwise.
    const free = await send('groups', { headers: meta({ case: 'none' }) });
    expect([free.status, limitHeadersOf(free.headers)]).toEqual([200, {}]);
    // A provider condition: the provider the request names.
    await policy('groups', { name: 'anthropic only', type: 'requests', unit: 'rph', value: 1, conditions: [{ key: 'provider', value: 'anthropic' }] });
    expect(await statuses([() => send('groups'), () => send('groups')])).toEqual([200, 200]);

    const users = await policy('groups', { name: 'per user', type: 'requests', unit: 'rpd', value: 5, group_by: [{ key: 'user' }], conditions: [{ key: 'metadata.case', value: 'users' }] });
    for (const user of ['u-1', 'u-1', 'u-2']) await send('groups', { headers: meta({ case: 'users' }), body: { user } });
    const counters = await usageOf('rate-limits', users.id, 'groups');
    expect(counters.data).toEqual([
      { group: { user: 'u-1' }, used: 2, reserved: 0, remaining: 3 },
      { group: { user: 'u-2' }, used: 1, reserved: 0, remaining: 4 },
    ]);
  });

  test('an archived policy stops limiting at once on this instance', async () => {
    const p = await policy('archive', { name: 'one', type: 'requests', unit: 'rpm', value: 1 });
    expect((await send('archive')).status).toBe(200);
    expect((await send('archive')).status).toBe(429);
    await gw.admin('DELETE', `/policies/rate-limits/${p.id}`, undefined, keys.archive);
    const after = await send('archive');
    expect([after.status, limitHeadersOf(after.headers)]).toEqual([200, {}]);
  });

  test('a cache hit counts as a request and costs no tokens', async () => {
    const requests = await policy('cache', { name: 'requests', type: 'requests', unit: 'rph', value: 100 });
    const tokens = await budget('cache', { name: 'tokens', type: 'tokens', credit_limit: 100_000 });
    const cached = { config: { cache: { mode: 'simple' } }, body: { max_tokens: 50 } };
    expect((await send('cache', cached)).headers.get('x-gateway-cache-status')).toBe('MISS');
    await eventually(async () => expect((await usageOf('usage-limits', tokens.id, 'cache')).data[0]).toMatchObject({ used: 11, reserved: 0 }));
    const hit = await eventually(async () => {
      const r = await send('cache', cached);
      expect(r.headers.get('x-gateway-cache-status')).toBe('HIT');
      return r;
    });
    expect(hit.status).toBe(200);
    await eventually(async () => expect((await usageOf('usage-limits', tokens.id, 'cache')).data[0]).toMatchObject({ used: 11, reserved: 0 }));
    const counted = (await usageOf('rate-limits', requests.id, 'cache')).data[0].used;
    expect(counted).toBeGreaterThanOrEqual(2);
    await send('cache', cached);
    expect((await usageOf('rate-limits', requests.id, 'cache')).data[0].used).toBe(counted + 1);
  });

  test('a request a guardrail denies still counts; an invalid one counts against nothing', async () => {
    const p = await policy('guard', { name: 'requests', type: 'requests', unit: 'rph', value: 100 });
    const denyIfSecret = { id: 'h1', type: 'guardrail', checks: [{ id: 'default.regexMatch', parameters: { rule: '\\bsecret\\b', not: true } }], on_fail: { deny: true } };
    const denied = await send('guard', { config: { before_request_hooks: [denyIfSecret] }, content: 'the secret' });
    expect(denied.status).toBe(446);
    expect(denied.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    const invalid = await send('guard', { body: { temperature: 7 } });
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-ratelimit-remaining-requests')).toBeNull();
    expect((await usageOf('rate-limits', p.id, 'guard')).data).toEqual([{ group: {}, used: 1, reserved: 0, remaining: 99 }]);
  });
});

describe('budgets', () => {
  test('periodic resets at the right instant in UTC: weekly, monthly, every N days, an explicit next_usage_reset_at', async () => {
    const cases: Array<[string, Json, string]> = [
      ['weekly', { periodic_reset: 'weekly' }, '2026-03-16T00:00:00.000Z'],
      ['monthly', { periodic_reset: 'monthly' }, '2026-04-01T00:00:00.000Z'],
      ['three days', { periodic_reset_days: 3 }, '2026-03-14T00:00:00.000Z'],
      ['explicit', { periodic_reset: 'monthly', next_usage_reset_at: '2026-03-20T09:00:00Z' }, '2026-03-20T00:00:00.000Z'],
    ];
    for (const [name, rule, reset] of cases) {
      clock.now = START;
      const meta = { 'x-gateway-metadata': JSON.stringify({ rule: name }) };
      const b = await budget('resets', { name, type: 'tokens', credit_limit: 28, ...rule, conditions: [{ key: 'metadata.rule', value: name }] });
      expect(b.next_usage_reset_at).toBe(reset);
      // 11 tokens a request (the mock's usage), reserved as prompt + max_tokens = 2 + 5: a third does not fit in 28.
      const small = { headers: meta, body: { max_tokens: 5 } };
      for (let i = 0; i < 2; i++) expect((await send('resets', small)).status).toBe(200);
      await eventually(async () => expect((await usageOf('usage-limits', b.id, 'resets')).data[0]).toMatchObject({ used: 22, reserved: 0 }));
      const refused = await send('resets', small);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('usage_limit_exceeded');
      expect(refused.body.error.message).toContain(b.id);
      const resetAt = Date.parse(reset);
      expect(refused.headers.get('retry-after')).toBe(String(Math.ceil((resetAt - clock.now) / 1000)));
      expect(limitHeadersOf(refused.headers)).toMatchObject({ 'x-ratelimit-limit-usage-tokens': '28', 'x-ratelimit-remaining-usage-tokens': '6' });

      clock.now = resetAt - 1;
      expect((await send('resets', small)).status).toBe(429);
      clock.now = resetAt;
      const after = await send('resets', small);
      expect(after.status).toBe(200);
      expect(after.headers.get('x-ratelimit-remaining-usage-tokens')).toBe('21');
      const shown = await gw.admin('GET', `/policies/usage-limits/${b.id}`, undefined, keys.resets);
      expect(shown.last_reset_at).toBe(reset);
      expect(Date.parse(shown.next_usage_reset_at)).toBeGreaterThan(resetAt);
    }
  });

  test('moving next_usage_reset_at keeps what the current period used', async () => {
    const b = await budget('keep', { name: 'keep', type: 'tokens', credit_limit: 1000, periodic_reset: 'monthly' });
    await send('keep', { body: { max_tokens: 5 } });
    await eventually(async () => expect((await usageOf('usage-limits', b.id, 'keep')).data[0]).toMatchObject({ used: 11 }));
    const moved = await gw.admin('PUT', `/policies/usage-limits/${b.id}`, { next_usage_reset_at: '2026-03-25' }, keys.keep);
    expect(moved.next_usage_reset_at).toBe('2026-03-25T00:00:00.000Z');
    const counters = await usageOf('usage-limits', b.id, 'keep');
    expect(counters).toMatchObject({ period_end: '2026-03-25T00:00:00.000Z', data: [{ used: 11 }] });
  });

  test('a cost budget reserves the estimate at the price list\'s price and settles to the real cost', async () => {
    const b = await budget('cost', { name: 'dollars', type: 'cost', credit_limit: 0.0005 });
    // gpt-4o-mini's list prices per million tokens (openai.com/api/pricing).
    const price = { input: 0.15, output: 0.6 };
    // The mock's usage: 9 prompt (3 cached), 2 completion (1 reasoning).
    const real = bundledPricing().cost('openai', 'gpt-4o-mini', { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3, reasoning_tokens: 1 }).cost!;
    const first = await send('cost', { body: { max_tokens: 100 } });
    expect(first.status).toBe(200);
    const reserved = (2 * price.input + 100 * price.output) / 1e6;
    expect(Number(first.headers.get('x-ratelimit-remaining-usage-cost'))).toBeCloseTo(0.0005 - reserved, 9);
    expect(first.headers.get('x-ratelimit-limit-usage-cost')).toBe('0.0005');
    const settled = await eventually(async () => {
      const u = await usageOf('usage-limits', b.id, 'cost');
      expect(u.data[0].reserved).toBe(0);
      return u.data[0];
    });
    expect(settled.used).toBeCloseTo(real, 9);
    // A request whose estimate does not fit what is left is refused before the call.
    const large = await send('cost', { body: { max_tokens: 1000 } });
    expect(large.status).toBe(429);
    expect(large.body.error.code).toBe('usage_limit_exceeded');
    expect(large.headers.get('retry-after')).toBeNull(); // this budget never resets
  });

  test('a token rate limit holds the estimate while the request runs: a second one that would not fit waits for the first to settle', async () => {
    const p = await policy('tokens', { name: 'tpm', type: 'tokens', unit: 'rpm', value: 100 });
    const slow = send('tokens', { body: { model: 'slow-1000', max_tokens: 60 } });
    await eventually(async () => expect((await usageOf('rate-limits', p.id, 'tokens')).data[0]?.reserved).toBe(62));
    const meanwhile = await send('tokens', { body: { max_tokens: 60 } });
    expect(meanwhile.status).toBe(429);
    expect(meanwhile.body.error.message).toMatch(/62 more held by requests in flight/);
    expect((await slow).status).toBe(200);
    // Settled to 11 real tokens: 62 fits again.
    await eventually(async () => expect((await send('tokens', { body: { max_tokens: 60 } })).status).toBe(200));
  });

  test('a model without a price under a cost budget is refused with usage_limit_unpriced; proxied calls without a model pass', async () => {
    const b = await budget('unpriced', { name: 'dollars', type: 'cost', credit_limit: 10 });
    const r = await send('unpriced', { body: { model: 'my-private-model' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'usage_limit_unpriced', param: 'model' });
    expect(r.body.error.message).toContain(b.id);
    expect((await send('unpriced')).status).toBe(200);
  });
});

describe('unpriced models allowed', () => {
  test('counted as 0 USD with one warning per model and interval', async () => {
    const local = { now: START };
    const g = await limitsGateway({ clock: local, limits: { unpricedModels: 'allow' } });
    try {
      const b = await g.admin('POST', '/policies/usage-limits', { name: 'dollars', type: 'cost', credit_limit: 10 });
      for (let i = 0; i < 3; i++) expect((await chat(g, mock.baseURL, { body: { model: 'my-private-model' } })).status).toBe(200);
      await eventually(async () => {
        const u = await g.admin('GET', `/policies/usage-limits/${b.id}/usage`);
        expect(u.data).toEqual([]);
        expect(g.logs.lines().filter((l) => l.msg?.includes('no known price'))).toHaveLength(1);
      });
    } finally {
      await g.close();
    }
  });
});

describe('policy changes across instances', () => {
  test('another instance applies a new policy once its cache entry expires (cacheTtlMs), this one at once', async () => {
    const db = join(await mkdtemp(join(tmpdir(), 'gw-limits-shared-')), 'gateway.db');
    const shared = { now: START };
    const a = await limitsGateway({ clock: shared, dbFile: db });
    const b = await limitsGateway({ clock: shared, dbFile: db });
    try {
      // b reads (and caches) the workspace's policies: none yet.
      expect(limitHeadersOf((await chat(b, mock.baseURL)).headers)).toEqual({});
      await a.admin('POST', '/policies/rate-limits', { name: 'shared', type: 'requests', unit: 'rph', value: 50 });
      expect((await chat(a, mock.baseURL)).headers.get('x-ratelimit-limit-requests')).toBe('50');
      shared.now = START + 9_999;
      expect((await chat(b, mock.baseURL)).headers.get('x-ratelimit-limit-requests')).toBeNull();
      shared.now = START + 10_000;
      expect((await chat(b, mock.baseURL)).headers.get('x-ratelimit-limit-requests')).toBe('50');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
