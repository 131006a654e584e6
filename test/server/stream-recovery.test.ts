import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BOOTSTRAP_KEY, GATEWAY_KEY, startTestServer, storedLogEntry } from '../helpers/gateway.js';
import { CONTINUATION_USAGE, FIRST, startBreakingUpstream, WHOLE } from '../mocks/breaking-upstream.js';

/**
 * Streams that survive a provider failure (docs/formats.md): through the bundled server, a stream that breaks
 * after it started (its connection reset mid-body, the provider's error event, silence past
 * stream_idle_timeout) is continued by the next target and reaches the official SDKs as one well-formed
 * stream, for each front door and for OpenAI, Anthropic and a translated provider (Gemini).
 */
let gw: Awaited<ReturnType<typeof startTestServer>>;
let upstream: Awaited<ReturnType<typeof startBreakingUpstream>>;

beforeAll(async () => {
  upstream = await startBreakingUpstream();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

type Provider = 'openai' | 'anthropic' | 'google';
type Break = 'reset' | 'error' | 'idle';

const leaf = (provider: Provider, model: string) => ({
  provider,
  api_key: `key-${provider}`,
  custom_host: provider === 'openai' ? `${upstream.url}/v1` : upstream.url,
  override_params: { model },
});

/** Two targets of one provider, the first breaking as asked; continued on the second. */
const config = (provider: Provider, kind: string, strategy: Record<string, unknown> = { on_stream_failure: 'continue' }) =>
  JSON.stringify({ strategy: { mode: 'fallback', ...strategy }, stream_idle_timeout: 300, targets: [leaf(provider, kind), leaf(provider, `${provider}-healthy`)] });

const headers = (cfg: string, traceId: string) => ({ 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': cfg, 'x-gateway-trace-id': traceId });
const openai = (cfg: string, traceId: string) => new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: headers(cfg, traceId) });
const anthropic = (cfg: string, traceId: string) => new Anthropic({ apiKey: 'unused', baseURL: gw.url, maxRetries: 0, defaultHeaders: headers(cfg, traceId) });

/** The log entry of a trace (the writer runs on its own thread: polled), with its detail. */
const logged = (traceId: string) => storedLogEntry(gw.url, traceId);

/** What each door's official SDK made of the stream: the text, the usage it reports, the stream's ids. */
async function consume(door: string, cfg: string, traceId: string): Promise<{ text: string; output: number; ids: Set<string> }> {
  const ids = new Set<string>();
  if (door === 'chat') {
    const stream = openai(cfg, traceId).chat.completions.stream({ model: 'm', stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say the sentence.' }] });
    stream.on('chunk', (c) => ids.add(c.id));
    const done = await stream.finalChatCompletion();
    return { text: done.choices[0]!.message.content ?? '', output: done.usage!.completion_tokens, ids };
  }
  if (door === 'responses') {
    const stream = openai(cfg, traceId).responses.stream({ model: 'm', input: 'Say the sentence.' });
    stream.on('event', (e) => {
      if ('response' in e) ids.add((e.response as { id: string }).id);
    });
    const done = await stream.finalResponse();
    expect(done.status).toBe('completed');
    const text = done.output.flatMap((o) => (o.type === 'message' ? o.content : [])).map((c) => (c.type === 'output_text' ? c.text : '')).join('');
    return { text, output: done.usage!.output_tokens, ids };
  }
  const stream = anthropic(cfg, traceId).messages.stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Say the sentence.' }] });
  const done = await stream.finalMessage();
  ids.add(done.id);
  return { text: done.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), output: done.usage.output_tokens, ids };
}

const FIRST_CHARS = FIRST.join('').length;
/** The first call broke unreported: its output is estimated from its text (characters / 4). */
const FIRST_OUTPUT = Math.ceil(FIRST_CHARS / 4);

describe('a stream that breaks mid-answer is continued by the next target', () => {
  const doors = ['chat', 'responses', 'messages'] as const;
  const providers: Provider[] = ['openai', 'anthropic', 'google'];
  const breaks: Break[] = ['reset', 'error', 'idle'];
  const cases = doors.flatMap((door) => providers.flatMap((provider) => breaks.map((kind) => [door, provider, kind] as const)));

  test.each(cases)('%s door, %s, broken by %s: one stream, the whole text, the usage of both calls', async (door, provider, kind) => {
    const traceId = `sr-${door}-${provider}-${kind}`;
    const before = upstream.continuations().length;
    const got = await consume(door, config(provider, kind), traceId);
    expect(got.text).toBe(WHOLE);
    expect(got.ids.size).toBe(1);
    expect(got.output).toBe(FIRST_OUTPUT + CONTINUATION_USAGE.completion);

    // The continuation went to the second target, with the partial answer as the assistant's turn.
    const asked = upstream.continuations().slice(before);
    expect(asked).toHaveLength(1);
    const body = asked[0]!.body as Record<string, any>;
    const model = asked[0]!.path.includes(':streamGenerateContent') ? decodeURIComponent(asked[0]!.path.split('/models/')[1]!.split(':')[0]!) : body.model;
    expect(model).toBe(`${provider}-healthy`);

    const entry = await logged(traceId);
    expect(entry.status).toBe(200);
    expect(entry.error_code).toBeNull();
    expect(entry.completion_tokens).toBe(FIRST_OUTPUT + CONTINUATION_USAGE.completion);
    expect(entry.prompt_tokens).toBeGreaterThan(CONTINUATION_USAGE.prompt);
    expect(entry.tokens_estimated).toBe(true);
    expect(entry.attempts).toHaveLength(2);
    const [first, second] = entry.attempts;
    expect(first.target).toBe('0');
    expect(second.target).toBe('1');
    expect(first.streamBreak.afterChars).toBe(FIRST_CHARS);
    if (kind === 'idle') expect(first.streamBreak.reason).toBe('idle_timeout');
    else if (kind === 'error') expect(first.streamBreak.reason).toBe('error_event');
    else expect(['connection', 'error_event']).toContain(first.streamBreak.reason);
    const mode = provider === 'anthropic' ? 'prefill' : 'instruct';
    // Anthropic continues its prefilled turn (the space the prefill left out comes back once); the others repeat "brown fox ".
    expect(second.continued).toEqual({ carriedChars: FIRST_CHARS, mode, trimmedChars: mode === 'prefill' ? 1 : 'brown fox '.length });
    // Priced as two calls, each at its own rates.
    expect(entry.price?.segments).toHaveLength(2);
  });
});

/** A raw streamed request: the status and the SSE events as the client reads them. */
async function raw(path: string, cfg: unknown, body: Record<string, unknown>, traceId: string) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers(typeof cfg === 'string' ? cfg : JSON.stringify(cfg), traceId) },
    body: JSON.stringify({ model: 'm', stream: true, ...body }),
  });
  const text = await res.text();
  const events = text
    .trim()
    .split('\n\n')
    .filter((b) => b !== '')
    .map((block) => {
      const name = /^event: (.*)$/m.exec(block)?.[1] ?? null;
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event: name, data: data === '[DONE]' || data === '' ? data : JSON.parse(data) };
    });
  return { status: res.status, text, events };
}

const chatText = (events: Array<{ data: any }>) => events.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join('');

describe('the joined stream, as sent', () => {
  test('Responses: one response, one message item, sequence numbers 0, 1, 2, … without a gap', async () => {
    const { events } = await raw('/v1/responses', config('openai', 'reset'), { input: 'hi' }, 'sr-raw-responses');
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.event === 'response.created')).toHaveLength(1);
    expect(events.filter((e) => e.event === 'response.output_item.added')).toHaveLength(1);
    expect(events.filter((e) => e.event === 'response.content_part.added')).toHaveLength(1);
    const created = events[0]!.data.response.id as string;
    expect(created).toMatch(/^resp_first\d+$/);
    const itemId = created.replace('resp_', 'msg_');
    const itemIds = new Set(events.filter((e) => e.data.item_id !== undefined).map((e) => e.data.item_id));
    expect(itemIds).toEqual(new Set([itemId]));
    const done = events.find((e) => e.event === 'response.output_text.done')!;
    expect(done.data.text).toBe(WHOLE);
    const completed = events.at(-1)!;
    expect(completed.event).toBe('response.completed');
    expect(completed.data.response.id).toBe(created);
    expect(completed.data.response.output).toEqual([expect.objectContaining({ id: itemId, content: [expect.objectContaining({ text: WHOLE })] })]);

    // The response the client got is the gateway's join: a later previous_response_id is rebuilt from the gateway's
    // store (the whole answer), not left to the provider, which holds only the part before the break under that id.
    const before = upstream.requests.length;
    const next = await raw('/v1/responses', { ...leaf('openai', 'ok') }, { previous_response_id: created, input: 'And then?' }, 'sr-raw-responses-next');
    expect(next.status).toBe(200);
    const sent = upstream.requests.slice(before).at(-1)!.body as Record<string, any>;
    expect(sent.previous_response_id).toBeUndefined();
    expect(JSON.stringify(sent.input)).toContain(WHOLE);
  });

  test('Messages: one message_start, one text block at index 0, one message_stop', async () => {
    const { events } = await raw('/v1/messages', config('anthropic', 'error'), { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }, 'sr-raw-messages');
    expect(events.filter((e) => e.event === 'message_start')).toHaveLength(1);
    expect(events.filter((e) => e.event === 'content_block_start').map((e) => e.data.index)).toEqual([0]);
    expect(events.filter((e) => e.event === 'content_block_stop').map((e) => e.data.index)).toEqual([0]);
    expect(new Set(events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.index))).toEqual(new Set([0]));
    expect(events.some((e) => e.event === 'error')).toBe(false);
    expect(events.at(-1)!.event).toBe('message_stop');
  });

  test('chat: one id and one role chunk, the usage chunk the sum of both calls', async () => {
    const { events } = await raw('/v1/chat/completions', config('openai', 'reset'), { stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }, 'sr-raw-chat');
    expect(chatText(events)).toBe(WHOLE);
    expect(new Set(events.filter((e) => e.data.id !== undefined).map((e) => e.data.id)).size).toBe(1);
    expect(events[0]!.data.id).toMatch(/^chatcmpl-first\d+$/);
    expect(events.filter((e) => e.data?.choices?.[0]?.delta?.role !== undefined)).toHaveLength(1);
    const usage = events.find((e) => e.data.usage)!.data.usage;
    expect(usage.completion_tokens).toBe(FIRST_OUTPUT + CONTINUATION_USAGE.completion);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(events.at(-1)!.data).toBe('[DONE]');
  });
});

describe('what is not continued', () => {
  test('without on_stream_failure a break ends the stream as before, and nothing is called again', async () => {
    const before = upstream.requests.length;
    const { status, events } = await raw('/v1/chat/completions', config('openai', 'reset', {}), { messages: [{ role: 'user', content: 'hi' }] }, 'sr-off');
    expect(status).toBe(200);
    expect(chatText(events)).toBe(FIRST.join(''));
    expect(events.at(-2)!.data.error.code).toBe('upstream_unreachable');
    expect(events.at(-1)!.data).toBe('[DONE]');
    expect(upstream.requests.length - before).toBe(1);
  });

  test.each([
    ['chat', '/v1/chat/completions', 'openai', { messages: [{ role: 'user', content: 'hi' }] }],
    ['messages', '/v1/messages', 'anthropic', { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const)('a break inside a tool call (%s door) ends with the door\'s error event; no continuation', async (door, path, provider, body) => {
    const before = upstream.requests.length;
    const traceId = `sr-tool-${door}`;
    const { status, events } = await raw(path, config(provider, 'tool-reset'), body, traceId);
    expect(status).toBe(200);
    if (door === 'chat') {
      // As without recovery: the error chunk the server writes for a stream that broke (no stream control here, so no [DONE]).
      expect(events.at(-1)!.data.error.code).toBe('upstream_unreachable');
    } else {
      expect(events.at(-1)!.event).toBe('error');
    }
    expect(upstream.requests.length - before).toBe(1);
    const entry = await logged(traceId);
    expect(entry.attempts).toHaveLength(1);
    expect(entry.attempts[0].streamBreak.reason).toBe('connection');
    expect(entry.error_code).toBe('upstream_unreachable');
  });
});

describe('where the continuation comes from', () => {
  test('the next target fails: the one that broke is asked again', async () => {
    const dead = { provider: 'openai', api_key: 'k', custom_host: 'http://127.0.0.1:9/v1', override_params: { model: 'dead' } };
    const cfg = { strategy: { mode: 'fallback', on_stream_failure: 'continue' }, targets: [leaf('openai', 'reset'), dead] };
    const { events } = await raw('/v1/chat/completions', cfg, { messages: [{ role: 'user', content: 'hi' }] }, 'sr-same-again');
    expect(chatText(events)).toBe(WHOLE);
    const entry = await logged('sr-same-again');
    expect(entry.attempts.map((a: any) => [a.target, a.status])).toEqual([['0', 200], ['1', null], ['0', 200]]);
    expect(entry.attempts[2].continued.mode).toBe('instruct');
  });

  test('Mistral continues an assistant prefix (`prefix: true`); the prefix its answer repeats is trimmed', async () => {
    const mistral = (model: string) => ({ provider: 'mistral-ai', api_key: 'k-mistral', custom_host: `${upstream.url}/v1`, override_params: { model } });
    const cfg = { strategy: { mode: 'fallback', on_stream_failure: 'continue' }, targets: [mistral('reset'), mistral('mistral-large-latest')] };
    const before = upstream.requests.length;
    const { events } = await raw('/v1/chat/completions', cfg, { messages: [{ role: 'user', content: 'hi' }] }, 'sr-prefix');
    expect(chatText(events)).toBe(WHOLE);
    const asked = upstream.requests.slice(before).at(-1)!.body as Record<string, any>;
    expect(asked.messages.at(-1)).toEqual({ role: 'assistant', content: FIRST.join(''), prefix: true });
    const entry = await logged('sr-prefix');
    expect(entry.attempts[1].continued).toEqual({ carriedChars: FIRST_CHARS, mode: 'prefix', trimmedChars: FIRST_CHARS });
  });

  test('retry.on_stream_failure: a single target continues its own stream', async () => {
    const cfg = { ...leaf('anthropic', 'reset'), retry: { attempts: 0, on_stream_failure: 'continue' } };
    const stream = anthropic(JSON.stringify(cfg), 'sr-retry').messages.stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Say it.' }] });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: WHOLE })]);
    const entry = await logged('sr-retry');
    expect(entry.attempts.map((a: any) => a.target)).toEqual(['0', '0']);
    expect(entry.attempts[1].continued).toEqual({ carriedChars: FIRST_CHARS, mode: 'prefill', trimmedChars: 1 });
  });
});

describe('one text for guardrails and the stream control', () => {
  test('a window check finds a phrase split across the seam', async () => {
    const cfg = JSON.parse(config('openai', 'reset'));
    cfg.output_guardrails = [{ id: 'no-fox', deny: true, 'default.contains': { words: ['fox jumps'], operator: 'none' } }];
    const { events } = await raw('/v1/chat/completions', cfg, { messages: [{ role: 'user', content: 'hi' }] }, 'sr-guard');
    expect(chatText(events)).not.toContain('jumps');
    expect(events.at(-2)!.data.error.code).toBe('guardrail_denied');
  });

  test('a redaction masks an address split across the seam', async () => {
    const cfg = JSON.parse(config('openai', 'email-reset'));
    cfg.output_guardrails = [{ id: 'mask', 'default.pii': { categories: ['email'], redact: true } }];
    const { events } = await raw('/v1/chat/completions', cfg, { messages: [{ role: 'user', content: 'hi' }] }, 'sr-redact');
    expect(chatText(events)).toBe('Write to [REDACTED_EMAIL] now.');
  });
});

describe('config and counters', () => {
  test.each([
    [{ strategy: { mode: 'loadbalance', on_stream_failure: 'continue' } }, 'on_stream_failure'],
    [{ strategy: { mode: 'fallback', max_continuations: 2 } }, 'max_continuations'],
    [{ strategy: { mode: 'fallback', on_stream_failure: 'continue', max_continuations: 9 } }, 'max_continuations'],
    [{ strategy: { mode: 'fallback', on_stream_failure: 'resume' } }, 'on_stream_failure'],
  ])('a bad setting is a 400 naming it: %j', async (strategy, field) => {
    const cfg = { ...strategy, targets: [leaf('openai', 'ok'), leaf('openai', 'ok')] };
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers(JSON.stringify(cfg), 'sr-bad') }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toContain(field);
  });

  test('/metrics counts breaks by outcome and the continuations', async () => {
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).text();
    expect(text).toMatch(/gateway_stream_breaks_total\{reason="idle_timeout",outcome="continued"\} [1-9]/);
    expect(text).toMatch(/gateway_stream_breaks_total\{reason="connection",outcome="tool_call"\} [1-9]/);
    expect(text).toMatch(/gateway_stream_continuations_total [1-9]/);
  });
});

describe('limits and budgets', () => {
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.url}/v1${path}`, { method, headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect(res.status).toBe(200);
    return res.json();
  };
  const used = async (id: string) => (await admin('GET', `/policies/rate-limits/${id}/usage`)).data[0]?.used ?? 0;

  test('each target is charged what it served, the request the sum of both calls', async () => {
    const perProvider = async (provider: string) => admin('POST', '/policies/rate-limits', { name: `tokens at ${provider}`, type: 'tokens', unit: 'rpm', value: 1_000_000, conditions: [{ key: 'provider', value: provider }] });
    const openaiPolicy = await perProvider('openai');
    const anthropicPolicy = await perProvider('anthropic');
    const whole = await admin('POST', '/policies/rate-limits', { name: 'all tokens', type: 'tokens', unit: 'rpm', value: 1_000_000 });
    const cfg = { strategy: { mode: 'fallback', on_stream_failure: 'continue' }, targets: [leaf('openai', 'reset'), leaf('anthropic', 'anthropic-healthy')] };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY, 'x-gateway-config': JSON.stringify(cfg), 'x-gateway-trace-id': 'sr-limits' },
      body: JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(text).toContain('lazy dog');
    const entry = await logged('sr-limits');
    expect(entry.attempts.map((a: any) => a.provider)).toEqual(['openai', 'anthropic']);
    expect(entry.attempts[1].continued.mode).toBe('prefill');
    const [first, second] = entry.price.segments as Array<{ provider: string }>;
    expect([first!.provider, second!.provider]).toEqual(['openai', 'anthropic']);
    await expect.poll(() => used(whole.id)).toBe(entry.total_tokens);
    // The settled amounts: the first call's estimate at OpenAI, the continuation's report at Anthropic.
    const openaiTokens = await used(openaiPolicy.id);
    const anthropicTokens = await used(anthropicPolicy.id);
    expect(anthropicTokens).toBe(CONTINUATION_USAGE.prompt + CONTINUATION_USAGE.completion);
    expect(openaiTokens + anthropicTokens).toBe(entry.total_tokens);
  });

  test('a target asked again for the continuation is charged once, for both of its calls', async () => {
    const policy = await admin('POST', '/policies/rate-limits', { name: 'tokens at openai, again', type: 'tokens', unit: 'rph', value: 1_000_000, conditions: [{ key: 'provider', value: 'openai' }] });
    const dead = { provider: 'openai', api_key: 'k', custom_host: 'http://127.0.0.1:9/v1', override_params: { model: 'dead' } };
    const cfg = { strategy: { mode: 'fallback', on_stream_failure: 'continue' }, targets: [leaf('openai', 'reset'), dead] };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': BOOTSTRAP_KEY, 'x-gateway-config': JSON.stringify(cfg), 'x-gateway-trace-id': 'sr-limits-again' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(await res.text()).toContain('lazy dog');
    const entry = await logged('sr-limits-again');
    expect(entry.attempts.map((a: any) => a.target)).toEqual(['0', '1', '0']);
    await expect.poll(() => used(policy.id)).toBe(entry.total_tokens);
  });
});
