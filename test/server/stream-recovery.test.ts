import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../helpers/gateway.js';
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
async function logged(traceId: string): Promise<Record<string, any>> {
  for (let i = 0; i < 200; i++) {
    const list = await (await fetch(`${gw.url}/v1/logs?trace_id=${traceId}`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).json();
    const entry = (list.data as Array<Record<string, any>>)[0];
    if (entry !== undefined) return (await fetch(`${gw.url}/v1/logs/${entry.id}`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).json();
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no log entry for ${traceId}`);
}

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
