import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { anthropicStreamTranslator, fromAnthropicMessage } from '../../../sdk/anthropic/translate.js';
import { geminiStreamTranslator } from '../../../sdk/gemini/stream.js';
import { fromGeminiResponse } from '../../../sdk/gemini/translate.js';
import type { OpenAIUsage } from '../../../sdk/openai/chunks.js';
import type { StreamTranslator } from '../../../sdk/openai/translate.js';

/** Native answers as the providers send them, taken from their documented examples (shared/providers). */
const fixture = (path: string) => readFileSync(new URL(`../../fixtures/providers/${path}`, import.meta.url), 'utf8');

/** Feeds a native stream through a translator in uneven pieces and collects the OpenAI chunks. */
function translate(t: StreamTranslator, native: string) {
  let out = '';
  for (let i = 0; i < native.length; i += 13) out += t.push(Buffer.from(native.slice(i, i + 13)));
  out += t.end();
  const events = out.split('\n\n').filter((e) => e !== '');
  expect(events.at(-1)).toBe('data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
  const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  const args = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).map((tc: any) => tc.function?.arguments ?? '').join('');
  const names = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).map((tc: any) => tc.function?.name).filter(Boolean);
  const finishes = chunks.map((c) => c.choices?.[0]?.finish_reason).filter(Boolean);
  return { chunks, text, args, names, finishes };
}

describe('anthropic fixtures', () => {
  test('the documented text + tool-use stream', () => {
    let usage: OpenAIUsage | null = null;
    const t = anthropicStreamTranslator({ model: 'claude', includeUsage: true, strict: true, onUsage: (u) => (usage = u) });
    const r = translate(t, fixture('anthropic/stream-text-tool-use.sse'));
    expect(r.chunks[0].choices[0].delta.role).toBe('assistant');
    expect(r.text).toBe('Let me check the weather.');
    expect(r.names).toEqual(['get_weather']);
    expect(JSON.parse(r.args)).toEqual({ city: 'Paris' });
    expect(r.finishes).toEqual(['tool_calls']);
    expect(r.chunks.at(-1).usage).toMatchObject({ prompt_tokens: 472, completion_tokens: 89 });
    expect(usage).not.toBeNull();
  });

  test('the documented message with thinking and a tool call', () => {
    const { completion, usage } = fromAnthropicMessage(JSON.parse(fixture('anthropic/message-thinking-tool-use.json')), { strict: false });
    const message = (completion.choices as any[])[0].message;
    expect(message.content).toBe('Let me check the weather.');
    expect(message.tool_calls[0]).toMatchObject({ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse(message.tool_calls[0].function.arguments)).toEqual({ city: 'Paris' });
    expect(message.content_blocks[0]).toMatchObject({ type: 'thinking' });
    expect((completion.choices as any[])[0].finish_reason).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 472 + 0 + 1024, completion_tokens: 91, prompt_tokens_details: { cached_tokens: 1024 } });
  });
});

describe('google fixtures', () => {
  test('the documented text stream (CRLF separators)', () => {
    let usage: OpenAIUsage | null = null;
    const r = translate(geminiStreamTranslator({ model: 'gemini-2.5-flash', includeUsage: true, strict: true, onUsage: (u) => (usage = u) }), fixture('google/stream-text.sse'));
    expect(r.text).toBe('Hello there! How can I help?');
    expect(r.finishes).toEqual(['stop']);
    expect(usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 9, total_tokens: 17 });
  });

  test('the documented function-call stream: one tool call, finish tool_calls although Gemini said STOP', () => {
    const r = translate(geminiStreamTranslator({ model: 'gemini-2.5-flash', includeUsage: false, strict: true }), fixture('google/stream-function-call.sse'));
    expect(r.names).toEqual(['get_weather']);
    expect(JSON.parse(r.args)).toEqual({ city: 'Paris' });
    expect(r.finishes).toEqual(['tool_calls']);
  });

  test('the documented response with a thought, text and a function call', () => {
    const { completion, usage } = fromGeminiResponse(JSON.parse(fixture('google/response.json')), { model: 'gemini-2.5-flash', strict: true });
    const choice = (completion.choices as any[])[0];
    expect(choice.message.content).toBe('Let me check.');
    expect(choice.message.tool_calls[0].function.name).toBe('get_weather');
    expect(choice.finish_reason).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 25 + 40, prompt_tokens_details: { cached_tokens: 64 }, completion_tokens_details: { reasoning_tokens: 40 } });
  });
});
