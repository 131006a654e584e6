import { describe, expect, test } from 'vitest';
import { GatewayError, UpstreamBody, type UpstreamResponse } from '../../../core/index.js';
import { anthropicErrorAnswer, fromAnthropicMessage } from '../../../sdk/anthropic/translate.js';

const message = (fields: Record<string, unknown> = {}) => ({
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [{ type: 'text', text: 'Hello!', citations: null }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 5 },
  ...fields,
});

const upstream = (status: number, headers: Record<string, string> = {}): UpstreamResponse => ({ status, headers, body: UpstreamBody.of(status, null) });

describe('fromAnthropicMessage', () => {
  test('a text answer → chat.completion', () => {
    const before = Math.floor(Date.now() / 1000);
    const { completion, usage } = fromAnthropicMessage(message(), { strict: true });
    expect(completion).toEqual({
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'claude-sonnet-4-5-20250929',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
    });
    expect(completion.created).toBeGreaterThanOrEqual(before);
    expect(usage).toBe(completion.usage);
  });

  test.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    [null, 'stop'],
    ['something_new', 'stop'],
  ])('stop_reason %s → finish_reason %s', (stop, finish) => {
    const { completion } = fromAnthropicMessage(message({ stop_reason: stop }), { strict: true });
    expect((completion.choices as Array<{ finish_reason: string }>)[0]!.finish_reason).toBe(finish);
  });

  test('usage: prompt = input + cache writes + cache reads; cached = cache reads; reasoning from thinking tokens', () => {
    const { usage } = fromAnthropicMessage(
      message({ usage: { input_tokens: 472, output_tokens: 91, cache_creation_input_tokens: 100, cache_read_input_tokens: 1024, output_tokens_details: { thinking_tokens: 40 } } }),
      { strict: true },
    );
    expect(usage).toEqual({
      prompt_tokens: 1596,
      completion_tokens: 91,
      total_tokens: 1687,
      prompt_tokens_details: { cached_tokens: 1024, cache_write_tokens: 100 },
      completion_tokens_details: { reasoning_tokens: 40 },
    });
  });

  test('tool calls: ids kept, arguments as a JSON string, content null when there is no text', () => {
    const { completion } = fromAnthropicMessage(
      message({ content: [{ type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } }], stop_reason: 'tool_use' }),
      { strict: true },
    );
    const choice = (completion.choices as Array<Record<string, any>>)[0]!;
    expect(choice.message).toEqual({
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [{ id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
    });
    expect(choice.finish_reason).toBe('tool_calls');
  });

  test('text blocks are joined; an answer with no blocks has empty content', () => {
    const two = fromAnthropicMessage(message({ content: [{ type: 'text', text: 'Let me ' }, { type: 'text', text: 'check.' }] }), { strict: true });
    expect((two.completion.choices as Array<Record<string, any>>)[0]!.message.content).toBe('Let me check.');
    const none = fromAnthropicMessage(message({ content: [] }), { strict: true });
    expect((none.completion.choices as Array<Record<string, any>>)[0]!.message.content).toBe('');
  });

  const withThinking = message({
    content: [
      { type: 'thinking', thinking: 'The user wants...', signature: 'EqQBCgIYAhIM' },
      { type: 'text', text: 'Let me check the weather.', citations: null },
      { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
  });

  test('thinking is dropped when strict', () => {
    const { completion } = fromAnthropicMessage(withThinking, { strict: true });
    const msg = (completion.choices as Array<Record<string, any>>)[0]!.message;
    expect(msg.content).toBe('Let me check the weather.');
    expect(msg).not.toHaveProperty('content_blocks');
    expect(JSON.stringify(completion)).not.toContain('The user wants');
  });

  test('thinking is returned in content_blocks (with its signature) when strict is false', () => {
    const { completion } = fromAnthropicMessage(withThinking, { strict: false });
    const msg = (completion.choices as Array<Record<string, any>>)[0]!.message;
    expect(msg.content).toBe('Let me check the weather.');
    expect(msg.content_blocks).toEqual([
      { type: 'thinking', thinking: 'The user wants...', signature: 'EqQBCgIYAhIM' },
      { type: 'text', text: 'Let me check the weather.' },
    ]);
    expect(msg.tool_calls).toHaveLength(1);
  });

  test('an answer that is not a message is a 502', () => {
    for (const bad of [null, 'x', { type: 'message' }, { content: 'text' }]) {
      expect(() => fromAnthropicMessage(bad, { strict: true })).toThrow(GatewayError);
    }
    try {
      fromAnthropicMessage({}, { strict: true });
    } catch (err) {
      expect((err as GatewayError).status).toBe(502);
    }
  });
});

describe('anthropicErrorAnswer', () => {
  const body = (type: string, msg: string) => ({ type: 'error', error: { type, message: msg }, request_id: 'req_011' });
  const parse = (r: { body: unknown }) => JSON.parse(r.body as string);

  test('message and error.type kept, same status', () => {
    const r = anthropicErrorAnswer(upstream(404, { 'request-id': 'req_011' }), body('not_found_error', 'The requested resource could not be found.'));
    expect(r.status).toBe(404);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['request-id']).toBe('req_011');
    expect(parse(r)).toEqual({ error: { message: 'The requested resource could not be found.', type: 'not_found_error', param: null, code: null } });
  });

  test('529 overloaded → 503', () => {
    const r = anthropicErrorAnswer(upstream(529), body('overloaded_error', 'Overloaded'));
    expect(r.status).toBe(503);
    expect(parse(r).error).toMatchObject({ message: 'Overloaded', type: 'overloaded_error' });
  });

  test('429: retry-after passed on, retry-after-ms added', () => {
    const r = anthropicErrorAnswer(upstream(429, { 'retry-after': '7' }), body('rate_limit_error', 'Slow down'));
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(r.headers['retry-after-ms']).toBe('7000');
  });

  test('a body that is not an Anthropic error still gives the envelope with the upstream status', () => {
    const r = anthropicErrorAnswer(upstream(413), null);
    expect(r.status).toBe(413);
    expect(parse(r).error).toEqual({ message: 'The upstream answered 413.', type: 'request_too_large', param: null, code: null });
    expect(parse(anthropicErrorAnswer(upstream(502), 'oops')).error.type).toBe('api_error');
    expect(anthropicErrorAnswer(upstream(529), null).status).toBe(503);
  });
});
