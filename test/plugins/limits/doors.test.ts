import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { Target } from '../../../core/index.js';
import { breaker } from '../../../plugins/breaker/index.js';
import { messagesDoor } from '../../../plugins/messages/index.js';
import { anthropic } from '../../../plugins/providers/anthropic/index.js';
import { responsesDoor } from '../../../plugins/responses/index.js';
import { bundledPricing } from '../../../sdk/index.js';
import { schemaErrors } from '../../../server/testing/index.js';
import { startAnthropicContractMock } from '../../mocks/contract/anthropic.js';
import { startOpenAIContractMock } from '../../../server/testing/index.js';
import type { ContractMock } from '../../../server/testing/index.js';
import { sseEvents } from '../../../server/testing/index.js';
import { ADMIN, eventually, limitHeadersOf, limitsGateway, type Answer, type Json, type LimitsGateway } from './helpers.js';

/**
 * Limits and the circuit breaker through the Responses and Messages doors (docs/limits.md,
 * docs/formats.md): `endpoint_type: chat` holds for the three chat doors, `responses` and
 * `messages` for one each; refusals keep their headers (and reach a Messages client in
 * Anthropic's envelope); token estimates count instructions, system prompts and the
 * conversation rebuilt from `previous_response_id`.
 */

/** Wednesday 2026-03-11, 10:00:15 UTC: rate windows end in 45 s. */
const START = Date.parse('2026-03-11T10:00:15Z');
const clock = { now: START };
let gw: LimitsGateway;
let openaiMock: ContractMock;
let anthropicMock: ContractMock;
const ids: Json = {};
const keys: Record<string, string> = {};

beforeAll(async () => {
  openaiMock = await startOpenAIContractMock();
  anthropicMock = await startAnthropicContractMock();
  gw = await limitsGateway({ clock, extra: [anthropic(), breaker({ now: () => clock.now }), responsesDoor(), messagesDoor()] });
  for (const ws of ['chat', 'doors', 'grouped', 'tokens', 'budget', 'estimate', 'envelope', 'users']) {
    ids[ws] = (await gw.admin('POST', '/workspaces', { name: `doors ${ws}`, slug: `doors-${ws}` })).id;
    keys[ws] = (await gw.admin('POST', '/api-keys', { type: 'workspace-service', name: ws, workspace_id: ids[ws], scopes: ['completions.write', 'policies.*', 'logs.read'] })).key;
  }
});
afterAll(async () => {
  await gw?.close();
  await openaiMock?.close();
  await anthropicMock?.close();
});
afterEach(() => {
  clock.now = START;
  openaiMock.next({ kind: 'text' });
  anthropicMock.next({ kind: 'text' });
});

type Door = 'chat' | 'responses' | 'messages' | 'count_tokens';
const PATHS: Record<Door, string> = { chat: '/chat/completions', responses: '/responses', messages: '/messages', count_tokens: '/messages/count_tokens' };
const openaiTarget = (extra: Json = {}): Target => ({ provider: 'openai', api_key: 'sk-test', custom_host: openaiMock.baseURL, ...extra });
const anthropicTarget = (extra: Json = {}): Target => ({ provider: 'anthropic', api_key: 'sk-ant', custom_host: anthropicMock.baseURL, ...extra });

/** The smallest body of each door, asking for `text`. */
function bodyFor(door: Door, model: string, text = 'Hello'): Json {
  if (door === 'chat') return { model, messages: [{ role: 'user', content: text }] };
  if (door === 'responses') return { model, input: text };
  if (door === 'count_tokens') return { model, messages: [{ role: 'user', content: text }] };
  return { model, max_tokens: 64, messages: [{ role: 'user', content: text }] };
}

/** A request through one door; the target is OpenAI's mock unless given (Responses native, Messages translated). */
async function send(door: Door, options: { key?: string; target?: Target; body?: Json; headers?: Record<string, string> } = {}): Promise<Answer & { text: string }> {
  const target = options.target ?? openaiTarget();
  const model = target.provider === 'anthropic' ? 'claude-sonnet-4-5' : 'gpt-4o-mini';
  const res = await fetch(`${gw.url}/v1${PATHS[door]}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': options.key ?? ADMIN, 'x-gateway-config': JSON.stringify(target), ...options.headers },
    body: JSON.stringify({ ...bodyFor(door, model), ...options.body }),
  });
  const text = await res.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = {};
  }
  return { status: res.status, body, headers: res.headers, text };
}

const policy = (ws: string, body: Json) => gw.admin('POST', '/policies/rate-limits', body, keys[ws]);
const budget = (ws: string, body: Json) => gw.admin('POST', '/policies/usage-limits', body, keys[ws]);
const usageOf = (kind: 'rate-limits' | 'usage-limits', id: string, ws: string) => gw.admin('GET', `/policies/${kind}/${id}/usage`, undefined, keys[ws]);
const chatOnly = [{ key: 'endpoint_type', value: 'chat' }];

describe('endpoint_type and the front doors', () => {
  test('a chat policy limits chat completions, Responses and Messages together, in one counter; count_tokens is not chat', async () => {
    const p = await policy('chat', { name: 'chat, 3 a minute', type: 'requests', unit: 'rpm', value: 3, conditions: chatOnly });
    const first = await send('chat', { key: keys.chat });
    const second = await send('responses', { key: keys.chat });
    const third = await send('messages', { key: keys.chat });
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect([first, second, third].map((a) => a.headers.get('x-ratelimit-remaining-requests'))).toEqual(['2', '1', '0']);
    // Translated or native, streamed or not: every door is refused once the counter is full.
    for (const door of ['chat', 'responses', 'messages'] as const) {
      const refused = await send(door, { key: keys.chat, target: anthropicTarget(), body: { stream: true } });
      expect([door, refused.status]).toEqual([door, 429]);
      expect(limitHeadersOf(refused.headers)).toEqual({ 'retry-after': '45', 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '45' });
      expect(refused.text).toContain(p.id);
    }
    // Counting tokens is not chat: no policy applies to it.
    const counted = await send('count_tokens', { key: keys.chat, target: anthropicTarget() });
    expect([counted.status, limitHeadersOf(counted.headers)]).toEqual([200, {}]);
    const counters = await usageOf('rate-limits', p.id, 'chat');
    expect(counters.data).toEqual([{ group: {}, used: 3, reserved: 0, remaining: 0 }]);
  });

  test('responses and messages name one door each; group_by endpoint_type reports the door', async () => {
    await policy('doors', { name: 'responses, 1 an hour', type: 'requests', unit: 'rph', value: 1, conditions: [{ key: 'endpoint_type', value: 'responses' }] });
    await policy('doors', { name: 'messages, 1 an hour', type: 'requests', unit: 'rph', value: 1, conditions: [{ key: 'endpoint_type', value: 'messages' }] });
    await policy('doors', { name: 'count_tokens, 1 an hour', type: 'requests', unit: 'rph', value: 1, conditions: [{ key: 'endpoint_type', value: 'count_tokens' }] });
    const statuses: Array<[Door, number]> = [];
    for (const door of ['chat', 'chat', 'responses', 'responses', 'messages', 'messages', 'count_tokens', 'count_tokens'] as const) {
      statuses.push([door, (await send(door, { key: keys.doors, target: door === 'count_tokens' ? anthropicTarget() : undefined })).status]);
    }
    expect(statuses).toEqual([
      ['chat', 200],
      ['chat', 200],
      ['responses', 200],
      ['responses', 429],
      ['messages', 200],
      ['messages', 429],
      ['count_tokens', 200],
      ['count_tokens', 429],
    ]);

    const grouped = await policy('grouped', { name: 'chat per door', type: 'requests', unit: 'rph', value: 1, conditions: chatOnly, group_by: [{ key: 'endpoint_type' }] });
    for (const door of ['chat', 'responses', 'messages'] as const) expect((await send(door, { key: keys.grouped })).status).toBe(200);
    expect((await send('responses', { key: keys.grouped })).status).toBe(429);
    const counters = await usageOf('rate-limits', grouped.id, 'grouped');
    expect(counters.data.map((g: Json) => [g.group.endpoint_type, g.used]).sort()).toEqual([
      ['chat', 1],
      ['messages', 1],
      ['responses', 1],
    ]);
  });

  test('per user on the Messages door: its metadata.user_id is the user (chat and Responses: the body\'s user)', async () => {
    const p = await policy('users', { name: 'one an hour per user', type: 'requests', unit: 'rph', value: 1, conditions: chatOnly, group_by: [{ key: 'user' }] });
    const asUser = (door: Door, user: string) => (door === 'messages' ? { metadata: { user_id: user } } : { user });
    const statuses: Array<[string, string, number]> = [];
    for (const [door, user] of [['messages', 'ann'], ['messages', 'bob'], ['messages', 'ann'], ['chat', 'cat'], ['responses', 'cat']] as const) {
      statuses.push([door, user, (await send(door, { key: keys.users, body: asUser(door, user) })).status]);
    }
    expect(statuses).toEqual([
      ['messages', 'ann', 200],
      ['messages', 'bob', 200],
      ['messages', 'ann', 429],
      ['chat', 'cat', 200],
      ['responses', 'cat', 429],
    ]);
    const counters = await usageOf('rate-limits', p.id, 'users');
    expect(counters.data.map((g: Json) => [g.group.user, g.used]).sort()).toEqual([
      ['ann', 1],
      ['bob', 1],
      ['cat', 1],
    ]);
  });

  test('the admin API takes every value group_by reports, and refuses others naming them', async () => {
    for (const value of ['chat', 'responses', 'messages', 'count_tokens', 'completions', 'embeddings', 'rerank', 'proxy']) {
      const p = await policy('envelope', { name: `only ${value}`, type: 'requests', unit: 'rpd', value: 1000, conditions: [{ key: 'endpoint_type', value }] });
      await gw.admin('DELETE', `/policies/rate-limits/${p.id}`, undefined, keys.envelope);
    }
    const res = await fetch(`${gw.url}/v1/policies/rate-limits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': keys.envelope! },
      body: JSON.stringify({ name: 'x', type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'endpoint_type', value: 'messages.count_tokens' }] }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ param: 'conditions[0].value', message: expect.stringContaining('chat, completions, embeddings, rerank, proxy, responses, messages, count_tokens') });
  });
});

describe('refusals through the doors', () => {
  test('Responses: the official SDK gets a RateLimitError with the x-ratelimit headers; Messages: Anthropic\'s envelope, status and headers', async () => {
    const p = await policy('envelope', { name: 'one a minute', type: 'requests', unit: 'rpm', value: 1 });
    const config = JSON.stringify(openaiTarget());
    const openaiClient = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': config, 'x-gateway-api-key': keys.envelope! } });
    const ok = await openaiClient.responses.create({ model: 'gpt-4o-mini', input: 'Hi' }).withResponse();
    expect(ok.response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const refused = await openaiClient.responses.create({ model: 'gpt-4o-mini', input: 'Hi' }).then(() => null, (err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const error = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', message: expect.stringContaining(p.id) });
    expect(limitHeadersOf(error.headers as Headers)).toEqual({ 'retry-after': '45', 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '45' });

    const anthropicClient = new Anthropic({ apiKey: 'unused', baseURL: gw.url, maxRetries: 0, defaultHeaders: { 'x-gateway-config': config, 'x-gateway-api-key': keys.envelope! } });
    const denied = await anthropicClient.messages.create({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).then(() => null, (err: unknown) => err);
    expect(denied).toBeInstanceOf(Anthropic.RateLimitError);
    const anthropicError = denied as InstanceType<typeof Anthropic.RateLimitError>;
    expect(anthropicError.status).toBe(429);
    expect(anthropicError.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringContaining(p.id) } });
    expect(schemaErrors('messages.json#/$defs/ErrorResponse', anthropicError.error)).toEqual([]);
    expect(limitHeadersOf(anthropicError.headers as Headers)).toEqual({ 'retry-after': '45', 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '45' });
    // Streamed, the refusal comes before any event: the same JSON envelope and headers.
    const streamed = await send('messages', { key: keys.envelope, body: { stream: true } });
    expect(streamed.status).toBe(429);
    expect(streamed.headers.get('content-type')).toContain('application/json');
    expect(streamed.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(streamed.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    await gw.admin('DELETE', `/policies/rate-limits/${p.id}`, undefined, keys.envelope);
  });
});

describe('tokens through the doors', () => {
  test('a chat-scoped token rate limit reserves each door\'s bound, settles to the real usage, and refuses what does not fit', async () => {
    const p = await policy('tokens', { name: 'chat tokens', type: 'tokens', unit: 'rpm', value: 100, conditions: chatOnly });
    // "Hello" is 2 tokens; the bound is max_output_tokens (Responses) or max_tokens (Messages).
    const responses = await send('responses', { key: keys.tokens, body: { max_output_tokens: 50 } });
    expect([responses.status, responses.headers.get('x-ratelimit-limit-tokens'), responses.headers.get('x-ratelimit-remaining-tokens')]).toEqual([200, '100', '48']);
    await eventually(async () => expect((await usageOf('rate-limits', p.id, 'tokens')).data[0]).toMatchObject({ used: 11, reserved: 0 }));
    const messages = await send('messages', { key: keys.tokens, body: { max_tokens: 50 } });
    expect([messages.status, messages.headers.get('x-ratelimit-remaining-tokens')]).toEqual([200, String(100 - 11 - 52)]);
    await eventually(async () => expect((await usageOf('rate-limits', p.id, 'tokens')).data[0]).toMatchObject({ used: 22, reserved: 0 }));

    // 78 left: a bound of 90 does not fit, through either door (Messages in Anthropic's envelope).
    const before = [openaiMock.requests.length, anthropicMock.requests.length];
    const tooBig = await send('messages', { key: keys.tokens, target: anthropicTarget(), body: { max_tokens: 90 } });
    expect([tooBig.status, tooBig.body.type, tooBig.body.error?.type]).toEqual([429, 'error', 'rate_limit_error']);
    expect(limitHeadersOf(tooBig.headers)).toMatchObject({ 'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '78', 'retry-after': '45' });
    const tooBigToo = await send('responses', { key: keys.tokens, target: anthropicTarget(), body: { max_output_tokens: 90 } });
    expect([tooBigToo.status, tooBigToo.body.error?.code]).toEqual([429, 'rate_limit_exceeded']);
    expect([openaiMock.requests.length, anthropicMock.requests.length]).toEqual(before);
  });

  test('a budget counts every door\'s real usage and cost, native or translated, streamed or not', async () => {
    const tokens = await budget('budget', { name: 'chat tokens', type: 'tokens', credit_limit: 10_000, conditions: chatOnly });
    const dollars = await budget('budget', { name: 'chat dollars', type: 'cost', credit_limit: 1 });
    const cases: Array<[Door, Target, Json]> = [
      ['responses', openaiTarget(), {}], // native
      ['responses', anthropicTarget(), { stream: true }], // translated, streamed
      ['messages', openaiTarget(), { stream: true }], // translated, streamed
      ['messages', anthropicTarget(), {}], // native
    ];
    for (const [i, [door, target, body]] of cases.entries()) {
      const answer = await send(door, { key: keys.budget, target, body: { ...body, ...(door === 'responses' ? { max_output_tokens: 20 } : { max_tokens: 20 }) } });
      expect([door, target.provider, answer.status]).toEqual([door, target.provider, 200]);
      if (body.stream === true) expect(sseEvents(answer.text).length).toBeGreaterThan(3);
      expect(answer.headers.get('x-ratelimit-limit-usage-tokens')).toBe('10000');
      expect(answer.headers.get('x-ratelimit-limit-usage-cost')).toBe('1.00');
      // Every answer of the mocks is 9 prompt tokens (3 cached) and 2 completion tokens.
      await eventually(async () => expect((await usageOf('usage-limits', tokens.id, 'budget')).data[0]).toMatchObject({ used: 11 * (i + 1), reserved: 0 }));
    }
    const pricing = bundledPricing();
    const usage = { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3, reasoning_tokens: 0 };
    const expected = 2 * pricing.cost('openai', 'gpt-4o-mini', usage).cost! + 2 * pricing.cost('anthropic', 'claude-sonnet-4-5', usage).cost!;
    const spent = await eventually(async () => {
      const u = (await usageOf('usage-limits', dollars.id, 'budget')).data[0];
      expect(u.reserved).toBe(0);
      return u.used as number;
    });
    expect(spent).toBeCloseTo(expected, 8);
  });

  test('the estimate counts Responses instructions, the Messages system prompt and the conversation of previous_response_id', async () => {
    const p = await policy('estimate', { name: 'chat tokens', type: 'tokens', unit: 'rpm', value: 2000, conditions: chatOnly });
    const used = async (expected: number) =>
      eventually(async () => expect((await usageOf('rate-limits', p.id, 'estimate')).data[0]).toMatchObject({ used: expected, reserved: 0 }));
    // 2000 characters of instructions are 500 tokens, "Hi" 1, the bound 10.
    const instructions = await send('responses', { key: keys.estimate, body: { input: 'Hi', instructions: 'x'.repeat(2000), max_output_tokens: 10 } });
    expect([instructions.status, instructions.headers.get('x-ratelimit-remaining-tokens')]).toEqual([200, String(2000 - 511)]);
    await used(11);
    const system = await send('messages', { key: keys.estimate, body: { system: [{ type: 'text', text: 'y'.repeat(2000) }], messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10 } });
    expect([system.status, system.headers.get('x-ratelimit-remaining-tokens')]).toEqual([200, String(2000 - 11 - 511)]);
    await used(22);

    // A first turn of 1200 characters (300 tokens), stored by the gateway; the second names it.
    const first = await send('responses', { key: keys.estimate, target: anthropicTarget(), body: { input: 'z'.repeat(1200), max_output_tokens: 10 } });
    expect([first.status, first.headers.get('x-ratelimit-remaining-tokens')]).toEqual([200, String(2000 - 22 - 310)]);
    await used(33);
    const second = await send('responses', { key: keys.estimate, target: anthropicTarget(), body: { input: 'Hi', previous_response_id: first.body.id, max_output_tokens: 10 } });
    expect(second.status).toBe(200);
    // The history (the first turn's input and its answer, "Hello!") is reserved for too: 1206 characters, 302 tokens.
    expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe(String(2000 - 33 - (1 + 302 + 10)));
    expect(anthropicMock.requests.at(-1)!.body.messages).toHaveLength(3);
    await used(44);
    // So a turn whose history no longer fits is refused before the provider is asked.
    await policy('estimate', { name: 'small', type: 'tokens', unit: 'rpm', value: 200, conditions: [{ key: 'endpoint_type', value: 'responses' }] });
    const calls = anthropicMock.requests.length;
    const third = await send('responses', { key: keys.estimate, target: anthropicTarget(), body: { input: 'Hi', previous_response_id: second.body.id, max_output_tokens: 10 } });
    expect([third.status, third.body.error?.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(anthropicMock.requests.length).toBe(calls);
  });
});

describe('the circuit breaker through the doors', () => {
  test.each([
    ['responses', 'openai (native)'],
    ['responses', 'anthropic (translated)'],
    ['messages', 'anthropic (native)'],
    ['messages', 'openai (translated)'],
  ] as const)('%s to %s: after the threshold the breaker answers without calling the provider, in the door\'s envelope', async (door, which) => {
    const provider = which.split(' ')[0] as 'openai' | 'anthropic';
    const mock = provider === 'openai' ? openaiMock : anthropicMock;
    // A credential of its own, so each case has its own breaker.
    const cb = { cb_config: { failure_threshold: 1, cooldown_interval: 30_000 }, api_key: `sk-cb-${door}-${provider}` };
    const target = provider === 'openai' ? openaiTarget(cb) : anthropicTarget(cb);
    mock.next({ kind: 'error', status: 503 });
    const failed = await send(door, { target });
    mock.next({ kind: 'text' });
    const calls = mock.requests.length;
    const open = await send(door, { target });
    expect(mock.requests.length).toBe(calls);
    expect(open.headers.get('retry-after')).toBe('30');
    if (door === 'responses') {
      expect([failed.status, open.status]).toEqual([503, 503]);
      expect(open.body.error).toMatchObject({ code: 'circuit_open', type: 'server_error' });
    } else {
      // Anthropic's envelope: 503 is its 529 overloaded_error.
      expect([failed.status, open.status]).toEqual([529, 529]);
      expect(open.body).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: expect.stringContaining('open') } });
      expect(schemaErrors('messages.json#/$defs/ErrorResponse', open.body)).toEqual([]);
    }
    // After the cooldown one trial goes through, and closes it.
    clock.now += 30_001;
    expect((await send(door, { target })).status).toBe(200);
    expect(mock.requests.length).toBe(calls + 1);
  });
});
