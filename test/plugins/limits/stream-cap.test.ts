import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REDIS_URL, requireService, uniquePrefix, clearRedisPrefix } from '../../helpers/services.js';
import { startLongStreamMock, type LongStreamMock } from '../../mocks/long-stream.js';
import { ADMIN, limitsGateway, type LimitsGateway } from './helpers.js';

/**
 * A token budget caps a stream that runs past what it reserved: it draws more as it goes and is cut
 * with `usage_limit_exceeded` when the budget has no more, on one instance and across three sharing
 * Redis. Each piece the mock streams is 4 characters: one token as the gateway counts text.
 */
const BUDGET = 200;
const PIECE = 'abc ';
let mock: LongStreamMock;

beforeAll(async () => {
  mock = await startLongStreamMock();
  mock.setPieces(Array.from({ length: 2000 }, () => PIECE));
});
afterAll(() => mock.close());

/** A budget of BUDGET tokens; each request reserves its prompt (1 token) and 8 output tokens. */
const limitOptions = (store: 'memory' | 'redis') => ({
  store,
  defaultCompletionTokens: 8,
  usageLimits: [{ id: 'stream-cap', type: 'tokens' as const, credit_limit: BUDGET, conditions: [{ key: 'metadata.case', value: 'cap' }] }],
});

async function stream(gw: LimitsGateway, traceId: string): Promise<{ status: number; text: string; events: string[] }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': ADMIN,
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-s', custom_host: mock.baseURL }),
      'x-gateway-metadata': JSON.stringify({ case: 'cap' }),
      'x-gateway-trace-id': traceId,
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  });
  const raw = await res.text();
  const events = raw.split('\n\n').filter((e) => e.startsWith('data: '));
  let text = '';
  for (const e of events) {
    const data = e.slice(6);
    if (data === '[DONE]') continue;
    text += JSON.parse(data).choices?.[0]?.delta?.content ?? '';
  }
  return { status: res.status, text, events };
}

function expectCut(r: { status: number; events: string[] }) {
  expect(r.status).toBe(200);
  expect(r.events.at(-1)).toBe('data: [DONE]');
  const error = JSON.parse(r.events.at(-2)!.slice(6)).error;
  expect(error.code).toBe('usage_limit_exceeded');
  expect(error.message).toContain('stream-cap');
  expect(error.message).toMatch(/cut after \d+ characters/);
}

describe('a budget caps a stream (memory store)', () => {
  let gw: LimitsGateway;
  beforeAll(async () => {
    gw = await limitsGateway({ clock: { now: Date.parse('2026-03-11T10:00:00Z') }, limits: limitOptions('memory') });
  });
  afterAll(() => gw.close());

  test(`a stream of 2,000 tokens under a budget of ${BUDGET} is cut at the budget (± one chunk), the upstream hung up on, the log says where`, async () => {
    const before = mock.streams.length;
    const r = await stream(gw, 'cap-one');
    expectCut(r);
    const tokens = r.text.length / PIECE.length;
    // The budget less the prompt's token, give or take one chunk.
    expect(Math.abs(tokens - (BUDGET - 1))).toBeLessThanOrEqual(1);
    await expect.poll(() => mock.streams[before]!.closedAt).not.toBeNull();
    expect(mock.streams[before]!.cutShort).toBe(true);
    await expect.poll(async () => (await gw.admin('GET', '/logs?trace_id=cap-one')).data[0]?.error_code).toBe('usage_limit_exceeded');
    const entry = (await gw.admin('GET', '/logs?trace_id=cap-one')).data[0];
    expect(entry.limit_policy_id).toBe('stream-cap');
    expect(entry.error_message).toMatch(/cut after \d+ characters/);
    // Spent: the next request is refused before it starts.
    await expect.poll(async () => (await stream(gw, 'cap-after')).status).toBe(429);
  });
});

const prefix = uniquePrefix('limits-stream-cap');
describe('a budget caps streams across three instances sharing Redis', () => {
  const gws: LimitsGateway[] = [];
  beforeAll(async () => {
    if (!(await requireService('Redis', REDIS_URL))) return;
    for (let i = 0; i < 3; i++) gws.push(await limitsGateway({ clock: { now: Date.parse('2026-03-11T10:00:00Z') }, redis: { url: REDIS_URL, prefix }, limits: limitOptions('redis') }));
  });
  afterAll(async () => {
    await Promise.all(gws.map((g) => g.close()));
    if (gws.length === 0) return;
    await clearRedisPrefix(prefix);
  });

  test(`three streams at once, one per instance, spend the budget of ${BUDGET} between them (± one chunk each) and are all cut`, async (ctx) => {
    if (gws.length === 0) ctx.skip();
    const results = await Promise.all(gws.map((g, i) => stream(g, `cap-redis-${i}`)));
    for (const r of results) expectCut(r);
    const tokens = results.reduce((n, r) => n + r.text.length / PIECE.length, 0);
    // Three prompts of one token each came out of the budget too.
    expect(Math.abs(tokens - (BUDGET - 3))).toBeLessThanOrEqual(3);
    // Every instance sees the budget spent.
    for (const g of gws) await expect.poll(async () => (await stream(g, 'cap-redis-after')).status).toBe(429);
  });
});
