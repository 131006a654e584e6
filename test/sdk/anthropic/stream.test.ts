import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import type { OpenAIUsage } from '../../../sdk/openai/chunks.js';
import { anthropicStreamTranslator, type AnthropicStreamOptions } from '../../../sdk/anthropic/translate.js';

/** The example stream of shared/providers/anthropic.md §4 (text + tool use), as sent. */
const DOC_STREAM = `event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the weather."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`;

const ev = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

/** A thinking stream (the doc's thinking block), with multi-byte characters to cut inside. */
const THINKING_STREAM = [
  ev({ type: 'message_start', message: { id: 'msg_think', type: 'message', role: 'assistant', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 10, cache_read_input_tokens: 4, cache_creation_input_tokens: 2, output_tokens: 1 } } }),
  ev({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  ev({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me solve this step by step… ∑' } }),
  ev({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' } }),
  ev({ type: 'content_block_stop', index: 0 }),
  ev({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
  ev({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Réponse: 42 🎉' } }),
  ev({ type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: { type: 'char_location', cited_text: 'x' } } }),
  ev({ type: 'content_block_stop', index: 1 }),
  ev({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 30, output_tokens_details: { thinking_tokens: 20 } } }),
  ev({ type: 'some_future_event', detail: 1 }),
  ev({ type: 'message_stop' }),
].join('');

function translate(input: string | Buffer, size: number, options: Partial<AnthropicStreamOptions> = {}): { out: string; usage: OpenAIUsage[] } {
  const usage: OpenAIUsage[] = [];
  const t = anthropicStreamTranslator({ model: 'requested', includeUsage: true, strict: true, onUsage: (u) => usage.push(u), ...options });
  const bytes = Buffer.isBuffer(input) ? input : Buffer.from(input, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i += size) out += t.push(bytes.subarray(i, i + size));
  out += t.end();
  return { out, usage };
}

/** The SSE `data:` payloads of translated output, JSON-parsed (except `[DONE]`). */
function events(out: string): unknown[] {
  expect(out.endsWith('\n\n')).toBe(true);
  return out
    .slice(0, -2)
    .split('\n\n')
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      const data = e.slice(6);
      return data === '[DONE]' ? '[DONE]' : JSON.parse(data);
    });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-01-02T03:04:05Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('anthropicStreamTranslator', () => {
  test('the doc example: role, text deltas, tool call start then fragments, finish, usage chunk, [DONE]', () => {
    const { out, usage } = translate(DOC_STREAM, DOC_STREAM.length);
    const base = { id: 'msg_014p7gG3wDgGV9EUtLvnow3U', object: 'chat.completion.chunk', created: 1767323045, model: 'claude-sonnet-4-5-20250929' };
    const chunk = (delta: object, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null });
    const expectedUsage = { prompt_tokens: 472, completion_tokens: 89, total_tokens: 561, prompt_tokens_details: { cached_tokens: 0 } };
    expect(events(out)).toEqual([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Let me check' }),
      chunk({ content: ' the weather.' }),
      chunk({ tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Pa' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'ris"}' } }] }),
      chunk({}, 'tool_calls'),
      { ...base, choices: [], usage: expectedUsage },
      '[DONE]',
    ]);
    expect(usage).toEqual([expectedUsage]);
  });

  test.each([1, 7, 64])('the doc example cut into %i-byte chunks gives the same output', (size) => {
    const whole = translate(DOC_STREAM, DOC_STREAM.length);
    expect(translate(DOC_STREAM, size)).toEqual(whole);
  });

  test('the doc example cut in two at every byte boundary gives the same output', () => {
    const bytes = Buffer.from(DOC_STREAM, 'utf8');
    const whole = translate(bytes, bytes.length).out;
    for (let cut = 0; cut <= bytes.length; cut++) {
      const t = anthropicStreamTranslator({ model: 'requested', includeUsage: true, strict: true, onUsage: () => {} });
      const out = t.push(bytes.subarray(0, cut)) + t.push(bytes.subarray(cut)) + t.end();
      if (out !== whole) expect.fail(`output differs when cut at byte ${cut}`);
    }
  });

  test('CRLF framing gives the same output', () => {
    const crlf = DOC_STREAM.replace(/\n/g, '\r\n');
    expect(translate(crlf, 7)).toEqual(translate(DOC_STREAM, DOC_STREAM.length));
  });

  test('no usage chunk without include_usage; onUsage is still called', () => {
    const { out, usage } = translate(DOC_STREAM, 64, { includeUsage: false });
    expect(out).not.toContain('"choices":[]');
    expect(out).not.toContain('"usage"');
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(usage).toHaveLength(1);
  });

  test('thinking: dropped when strict, reasoning_content when not; multi-byte text survives any cut', () => {
    const strict = translate(THINKING_STREAM, THINKING_STREAM.length);
    expect(strict.out).not.toContain('reasoning_content');
    expect(strict.out).not.toContain('EqQBCgIYAhIM');
    const loose = translate(THINKING_STREAM, THINKING_STREAM.length, { strict: false });
    const deltas = (events(loose.out) as Array<{ choices?: Array<{ delta: Record<string, unknown>; finish_reason: string | null }> }>)
      .flatMap((e) => e.choices ?? [])
      .map((c) => c.delta);
    expect(deltas).toContainEqual({ reasoning_content: 'Let me solve this step by step… ∑' });
    expect(deltas).toContainEqual({ content: 'Réponse: 42 🎉' });
    expect(loose.out).not.toContain('EqQBCgIYAhIM');
    for (const size of [1, 7, 64]) {
      expect(translate(THINKING_STREAM, size, { strict: false })).toEqual(loose);
      expect(translate(THINKING_STREAM, size)).toEqual(strict);
    }
    expect(loose.usage).toEqual([
      { prompt_tokens: 16, completion_tokens: 30, total_tokens: 46, prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 20 } },
    ]);
  });

  test('an error event mid-stream: the OpenAI error event then [DONE]; the rest is ignored', () => {
    const stream = [
      ev({ type: 'message_start', message: { id: 'msg_err', model: 'claude-x', content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
      ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }),
      ev({ type: 'message_stop' }),
    ].join('');
    for (const size of [1, 7, stream.length]) {
      const { out, usage } = translate(stream, size);
      const parsed = events(out);
      expect(parsed.at(-2)).toEqual({ error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: null } });
      expect(parsed.at(-1)).toBe('[DONE]');
      expect(out).toContain('"content":"Hel"');
      expect(out).not.toContain('"content":"lo"');
      expect(out.match(/\[DONE\]/g)).toHaveLength(1);
      expect(usage).toEqual([{ prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } }]);
    }
  });

  test('a stream cut off before the answer finished ends with an error event and [DONE]', () => {
    const cut = DOC_STREAM.slice(0, DOC_STREAM.indexOf('event: content_block_stop'));
    const parsed = events(translate(cut, 7).out);
    expect(parsed.at(-2)).toMatchObject({ error: { type: 'upstream_error' } });
    expect(parsed.at(-1)).toBe('[DONE]');
  });

  test('a stream that lost only message_stop still ends cleanly', () => {
    const cut = DOC_STREAM.slice(0, DOC_STREAM.indexOf('event: message_stop'));
    expect(translate(cut, 7)).toEqual(translate(DOC_STREAM, 7));
  });

  test('a tool with no argument deltas gets "{}" as arguments', () => {
    const stream = [
      ev({ type: 'message_start', message: { id: 'msg_t', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } }),
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'now', input: {} } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '' } }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } }),
      ev({ type: 'message_stop' }),
    ].join('');
    const args = (events(translate(stream, 64).out) as Array<{ choices?: Array<{ delta: { tool_calls?: Array<{ function: { arguments: string } }> } }> }>)
      .flatMap((e) => e.choices ?? [])
      .flatMap((c) => c.delta.tool_calls ?? [])
      .map((tc) => tc.function.arguments)
      .join('');
    expect(args).toBe('{}');
  });

  test.each([
    ['max_tokens', 'length'],
    ['refusal', 'content_filter'],
    ['stop_sequence', 'stop'],
  ])('message_delta stop_reason %s → finish_reason %s', (stop, finish) => {
    const stream = DOC_STREAM.replace('"stop_reason":"tool_use"', `"stop_reason":"${stop}"`);
    expect(translate(stream, 64).out).toContain(`"finish_reason":"${finish}"`);
  });

  test('a malformed event ends the stream with an error event', () => {
    const stream = ev({ type: 'message_start', message: { id: 'm', model: 'x', content: [], usage: {} } }) + 'event: content_block_delta\ndata: {not json\n\n';
    const parsed = events(translate(stream, 64).out);
    expect(parsed.at(-2)).toMatchObject({ error: { type: 'upstream_error' } });
    expect(parsed.at(-1)).toBe('[DONE]');
  });
});
