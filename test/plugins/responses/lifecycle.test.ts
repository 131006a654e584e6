import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cache } from '../../../plugins/cache/index.js';
import { cacheSimple } from '../../../plugins/cache/simple/index.js';
import { guardrailChecks } from '../../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../../plugins/guardrails/index.js';
import { logStore } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { retry } from '../../../plugins/retry/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { sseEvents } from '../../../server/testing/index.js';
import { doorGateway } from './helpers.js';

/** The Responses door through the rest of the lifecycle: fallback, retries, cache, guardrails, logs. */
let t: Awaited<ReturnType<typeof doorGateway>>;

beforeAll(async () => {
  t = await doorGateway({}, [trace(), retry(), guardrailChecks(), guardrails(), cache(), cacheSimple(), logStore({ capture: 'full', writer: 'inline', flushIntervalMs: 5 }), logApi()]);
});
afterAll(() => t.close());

const fallback = () => ({ strategy: { mode: 'fallback' }, targets: [t.targets.openai, { ...t.targets.anthropic, override_params: { model: 'claude-sonnet-4-5' } }] });

async function logOf(traceId: string): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const list = await (await t.call('GET', `/logs?trace_id=${traceId}`)).json();
    if (list.data?.length > 0) return list.data[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no log entry');
}

describe('a fallback from OpenAI (native) to Anthropic (translated) through the Responses door', () => {
  test('OpenAI fails, Anthropic answers in the Responses shape; the attempts say which was translated; the log names the door', async () => {
    t.openaiMock.next({ kind: 'error', status: 503 });
    const res = await t.call('POST', '/responses', { body: { model: 'gpt-4o-mini', input: 'Hi' }, headers: { 'x-gateway-config': JSON.stringify(fallback()), 'x-gateway-trace-id': 'trace-fallback-1' } });
    t.openaiMock.next({ kind: 'text' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-provider')).toBe('anthropic');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('1');
    const body = await res.json();
    expect(body.object).toBe('response');
    expect(body.output[0].content[0].text).toBe('Hello!');
    expect(t.openaiMock.requests.at(-1)!.path).toBe('/v1/responses');
    expect(t.anthropicMock.requests.at(-1)!.path).toBe('/v1/messages');
    const entry = await logOf('trace-fallback-1');
    expect(entry.front_door).toBe('responses');
    expect(entry.route).toBe('responses');
    expect(entry.fallback_count).toBe(1);
    expect(entry.attempts.map((a: any) => [a.provider, a.status, a.via ?? null])).toEqual([
      ['openai', 503, null],
      ['anthropic', 200, 'chat.completions'],
    ]);
    expect(entry.prompt_tokens).toBe(9);
    expect(entry.completion_tokens).toBe(2);
    expect(entry.cost).toBeGreaterThan(0);
  });

  test('a conversation started natively at OpenAI continues at Anthropic: the gateway rebuilds it from its store', async () => {
    const first = await t.client(t.targets.openai).responses.create({ model: 'gpt-4o-mini', input: 'Remember: blue.' });
    expect(first.id).toMatch(/^resp_mock/);
    t.openaiMock.next({ kind: 'error', status: 500 });
    const second = await t.client(fallback()).responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'Which colour?' });
    t.openaiMock.next({ kind: 'text' });
    expect(second.output_text).toBe('Hello!');
    // OpenAI was asked with the id it knows; Anthropic with the conversation itself.
    expect(t.openaiMock.requests.at(-1)!.body.previous_response_id).toBe(first.id);
    expect(t.anthropicMock.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Remember: blue.' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'Which colour?' },
    ]);
    // And back at OpenAI, which never saw the Anthropic turn: the conversation is sent, not the id.
    await t.client(t.targets.openai).responses.create({ model: 'gpt-4o-mini', previous_response_id: second.id, input: 'Sure?' });
    const sent = t.openaiMock.requests.at(-1)!.body;
    expect(sent.previous_response_id).toBeUndefined();
    expect(sent.input.map((i: any) => i.content?.[0]?.text ?? i.content)).toEqual(['Remember: blue.', 'Hello!', 'Which colour?', 'Hello!', 'Sure?']);
  });

  test('streamed, the same fallback answers with the Responses events', async () => {
    t.openaiMock.next({ kind: 'error', status: 503 });
    const res = await t.call('POST', '/responses', { body: { model: 'gpt-4o-mini', input: 'Hi', stream: true }, headers: { 'x-gateway-config': JSON.stringify(fallback()) } });
    t.openaiMock.next({ kind: 'text' });
    const events = sseEvents(await res.text());
    expect(events[0]!.event).toBe('response.created');
    expect(events.at(-1)!.event).toBe('response.completed');
  });
});

describe('retries and the cache', () => {
  test('a 429 from the translated provider is retried on the door as on chat, then answered in the envelope', async () => {
    t.anthropicMock.next({ kind: 'error', status: 429 });
    const before = t.anthropicMock.requests.length;
    const res = await t.call('POST', '/responses', {
      body: { model: 'claude-sonnet-4-5', input: 'Hi' },
      headers: { 'x-gateway-config': JSON.stringify({ ...t.targets.anthropic, retry: { attempts: 1, on_status_codes: [429] } }) },
    });
    t.anthropicMock.next({ kind: 'text' });
    expect(t.anthropicMock.requests.length - before).toBe(2);
    expect(res.status).toBe(429);
    expect((await res.json()).error.message).toContain('Mock error 429');
  });

  test('a cached answer is served again with its id, as JSON and as a replayed stream', async () => {
    const config = JSON.stringify({ ...t.targets.anthropic, cache: { mode: 'simple' } });
    const body = { model: 'claude-sonnet-4-5', input: 'Cache me' };
    const first = await t.call('POST', '/responses', { body, headers: { 'x-gateway-config': config } });
    expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
    const answer = await first.json();
    const calls = t.anthropicMock.requests.length;
    const second = await t.call('POST', '/responses', { body, headers: { 'x-gateway-config': config } });
    expect(second.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(await second.json()).toEqual(answer);
    const streamed = await t.call('POST', '/responses', { body: { ...body, stream: true }, headers: { 'x-gateway-config': config } });
    expect(streamed.headers.get('x-gateway-cache-status')).toBe('HIT');
    const events = sseEvents(await streamed.text());
    expect(events.at(-1)!.data.response.output).toEqual(answer.output);
    expect(t.anthropicMock.requests.length).toBe(calls);
    // Still retrievable, once.
    expect((await t.call('GET', `/responses/${answer.id}`)).status).toBe(200);
  });
});

describe('guardrails on the Responses door', () => {
  const guard = (extra: Record<string, unknown>) => JSON.stringify({ ...t.targets.anthropic, ...extra });

  test('an input guardrail reads the last input item and denies with 446', async () => {
    const config = guard({ input_guardrails: [{ id: 'g', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] });
    const before = t.anthropicMock.requests.length;
    const res = await t.call('POST', '/responses', { body: { model: 'claude-sonnet-4-5', input: [{ role: 'user', content: [{ type: 'input_text', text: 'a forbidden thing' }] }] }, headers: { 'x-gateway-config': config } });
    expect(res.status).toBe(446);
    expect(t.anthropicMock.requests.length).toBe(before);
    const ok = await t.call('POST', '/responses', { body: { model: 'claude-sonnet-4-5', input: 'fine' }, headers: { 'x-gateway-config': config } });
    expect(ok.status).toBe(200);
  });

  test('an output guardrail reads the output text, JSON and streamed (the stream fails: error, then response.failed instead of response.completed)', async () => {
    const config = guard({ output_guardrails: [{ id: 'g', deny: true, 'default.contains': { words: ['hello'], operator: 'none' } }] });
    const json = await t.call('POST', '/responses', { body: { model: 'claude-sonnet-4-5', input: 'Hi' }, headers: { 'x-gateway-config': config } });
    expect(json.status).toBe(446);
    const res = await t.call('POST', '/responses', { body: { model: 'claude-sonnet-4-5', input: 'Hi', stream: true }, headers: { 'x-gateway-config': config } });
    const events = sseEvents(await res.text());
    const denial = events.findIndex((e) => e.event === 'error');
    expect(denial).toBeGreaterThan(0);
    expect(events[denial]!.data.message).toContain('Denied');
    expect(events[denial]!.data.code).toBe('guardrail_denied');
    expect(events[denial]!.data.error.code).toBe('guardrail_denied');
    expect(events.at(-1)!.event).toBe('response.failed');
    expect(events.at(-1)!.data.response.status).toBe('failed');
    expect(events.at(-1)!.data.response.error.code).toBe('guardrail_denied');
    expect(events.at(-1)!.data.sequence_number).toBe(events[denial]!.data.sequence_number + 1);
    expect(events.some((e) => e.event === 'response.completed')).toBe(false);
  });
});
