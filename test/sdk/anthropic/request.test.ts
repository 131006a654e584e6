import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../../core/index.js';
import { toAnthropicRequest, type AnthropicRequestOptions } from '../../../sdk/anthropic/translate.js';

const OPTS: AnthropicRequestOptions = { provider: 'anthropic', defaultMaxTokens: 4096, stream: false, strict: true };

const map = (body: Record<string, unknown>, opts: Partial<AnthropicRequestOptions> = {}) =>
  toAnthropicRequest({ model: 'claude-x', messages: [{ role: 'user', content: 'Hi' }], ...body }, { ...OPTS, ...opts });

/** The GatewayError thrown by a mapping, for assertions on its fields. */
function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('toAnthropicRequest: body fields', () => {
  test('model, stream and the max_tokens default', () => {
    expect(map({})).toEqual({ model: 'claude-x', max_tokens: 4096, messages: [{ role: 'user', content: 'Hi' }], stream: false });
    expect(map({}, { stream: true, defaultMaxTokens: 100 })).toMatchObject({ max_tokens: 100, stream: true });
  });

  test('max_completion_tokens wins over max_tokens, which wins over the default', () => {
    expect(map({ max_tokens: 50 }).max_tokens).toBe(50);
    expect(map({ max_tokens: 50, max_completion_tokens: 70 }).max_tokens).toBe(70);
    expect(map({ max_tokens: null, max_completion_tokens: null }).max_tokens).toBe(4096);
  });

  test('temperature 0..1 passes; above 1 is a 400 naming temperature and the provider', () => {
    expect(map({ temperature: 0.7 }).temperature).toBe(0.7);
    expect(map({ temperature: 1 }).temperature).toBe(1);
    expect(map({ temperature: null })).not.toHaveProperty('temperature');
    const err = refusal(() => map({ temperature: 1.5 }));
    expect(err.status).toBe(400);
    expect(err.param).toBe('temperature');
    expect(err.message).toContain('temperature');
    expect(err.message).toContain('"anthropic"');
    expect(refusal(() => map({ temperature: 1.5 }, { provider: 'vertex-ai' })).message).toContain('"vertex-ai"');
  });

  test('top_p passes (and top_k, an Anthropic extension)', () => {
    expect(map({ top_p: 0.9, top_k: 40 })).toMatchObject({ top_p: 0.9, top_k: 40 });
  });

  test('stop: a string is wrapped, an array kept', () => {
    expect(map({ stop: 'END' }).stop_sequences).toEqual(['END']);
    expect(map({ stop: ['a', 'b'] }).stop_sequences).toEqual(['a', 'b']);
    expect(map({ stop: null })).not.toHaveProperty('stop_sequences');
  });

  test('user → metadata.user_id', () => {
    expect(map({ user: 'u-42' }).metadata).toEqual({ user_id: 'u-42' });
  });

  test('n > 1 is a 400 naming n and the provider; n = 1 is fine', () => {
    const err = refusal(() => map({ n: 2 }));
    expect(err.code).toBe('invalid_request');
    expect(err.param).toBe('n');
    expect(err.message).toContain('anthropic');
    expect(err.message).toContain('n');
    expect(map({ n: 1 })).not.toHaveProperty('n');
  });

  test('fields without an Anthropic equivalent are dropped', () => {
    const out = map({
      seed: 1,
      logprobs: true,
      top_logprobs: 2,
      logit_bias: { '1': 5 },
      presence_penalty: 0.5,
      frequency_penalty: 0.5,
      stream_options: { include_usage: true },
      response_format: { type: 'json_object' },
      reasoning_effort: 'low',
      service_tier: 'auto',
      store: true,
    });
    expect(Object.keys(out).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream']);
  });

  test('response_format json_schema → output_config.format', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(map({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } }).output_config).toEqual({
      format: { type: 'json_schema', schema },
    });
    expect(refusal(() => map({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } })).param).toBe('response_format.json_schema.schema');
    expect(map({ response_format: { type: 'text' } })).not.toHaveProperty('output_config');
  });

  test('thinking: a 400 when strict; passed through when strict is false', () => {
    const thinking = { type: 'enabled', budget_tokens: 2048 };
    const err = refusal(() => map({ thinking }));
    expect(err.param).toBe('thinking');
    expect(err.message).toContain('strict_reference_compliance: false');
    expect(map({ thinking }, { strict: false }).thinking).toEqual(thinking);
    expect(map({ thinking: { type: 'disabled' } }).thinking).toEqual({ type: 'disabled' });
  });
});

describe('toAnthropicRequest: tools', () => {
  const fn = { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
  const tools = [{ type: 'function', function: fn }];

  test('tools → name, description, input_schema (an empty object schema when parameters are missing)', () => {
    expect(map({ tools }).tools).toEqual([{ name: 'get_weather', description: 'Weather', input_schema: fn.parameters }]);
    expect(map({ tools: [{ type: 'function', function: { name: 'ping', strict: true } }] }).tools).toEqual([
      { name: 'ping', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(refusal(() => map({ tools: [{ type: 'custom', custom: { name: 'x' } }] })).param).toBe('tools[0]');
  });

  test.each([
    ['none', { type: 'none' }],
    ['auto', { type: 'auto' }],
    ['required', { type: 'any' }],
    [{ type: 'function', function: { name: 'get_weather' } }, { type: 'tool', name: 'get_weather' }],
  ] as const)('tool_choice %j → %j', (choice, expected) => {
    expect(map({ tools, tool_choice: choice }).tool_choice).toEqual(expected);
  });

  test('parallel_tool_calls: false → disable_parallel_tool_use on the tool_choice object', () => {
    expect(map({ tools, parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(map({ tools, tool_choice: 'required', parallel_tool_calls: false }).tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(map({ tools, tool_choice: 'none', parallel_tool_calls: false }).tool_choice).toEqual({ type: 'none' });
    expect(map({ tools, parallel_tool_calls: true })).not.toHaveProperty('tool_choice');
  });

  test('no tools: no tool_choice either', () => {
    expect(map({ tool_choice: 'auto' })).not.toHaveProperty('tool_choice');
  });

  test('deprecated functions and function_call map like tools and tool_choice', () => {
    const out = map({ functions: [fn], function_call: { name: 'get_weather' } });
    expect(out.tools).toEqual([{ name: 'get_weather', description: 'Weather', input_schema: fn.parameters }]);
    expect(out.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
  });
});

describe('toAnthropicRequest: messages', () => {
  const messages = (msgs: unknown[], opts: Partial<AnthropicRequestOptions> = {}) => map({ messages: msgs }, opts);

  test('system and developer messages → top-level system text blocks, in order', () => {
    const out = messages([
      { role: 'system', content: 'One.' },
      { role: 'developer', content: [{ type: 'text', text: 'Two.' }, { type: 'text', text: 'Three.', cache_control: { type: 'ephemeral' } }] },
      { role: 'user', content: 'Hi' },
      { role: 'system', content: '' },
    ]);
    expect(out.system).toEqual([
      { type: 'text', text: 'One.' },
      { type: 'text', text: 'Two.' },
      { type: 'text', text: 'Three.', cache_control: { type: 'ephemeral' } },
    ]);
    expect(out.messages).toEqual([{ role: 'user', content: 'Hi' }]);
  });

  test('user text and images: data URL → base64 source, http(s) URL → url source, PDF data URL → document', () => {
    const out = messages([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'image_url', image_url: { url: 'data:application/pdf;base64,JVBERi0=' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi1=', filename: 'x.pdf' } },
        ],
      },
    ]);
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi1=' } },
        ],
      },
    ]);
  });

  test('unsupported parts and URLs are 400s naming the part', () => {
    expect(refusal(() => messages([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }])).param).toBe(
      'messages[0].content[0].type',
    );
    expect(refusal(() => messages([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }])).param).toBe(
      'messages[0].content[0].image_url.url',
    );
    expect(refusal(() => messages([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:audio/wav;base64,AAAA' } }] }])).message).toContain(
      'audio/wav',
    );
  });

  test('assistant text + tool_calls → text then tool_use blocks (arguments parsed, {} when they do not parse)', () => {
    const out = messages([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{not json' } },
        ],
      },
    ]);
    expect((out.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
      ],
    });
  });

  test('consecutive tool messages → one user turn of tool_result blocks, merged with a following user message', () => {
    const out = messages([
      { role: 'user', content: 'Weather and time?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'noon' }] },
      { role: 'user', content: 'Thanks' },
    ]);
    expect((out.messages as unknown[]).slice(2)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: 'noon' }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
  });

  test('consecutive same-role turns are merged', () => {
    const out = messages([
      { role: 'user', content: 'A' },
      { role: 'user', content: [{ type: 'text', text: 'B' }] },
      { role: 'assistant', content: 'C' },
      { role: 'assistant', content: [{ type: 'text', text: 'D' }] },
    ]);
    expect(out.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'C' }, { type: 'text', text: 'D' }] },
    ]);
  });

  test('deprecated function messages are answered like tool messages, matched to the function_call by name', () => {
    const out = messages([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { role: 'function', name: 'get_weather', content: '18C' },
    ]);
    const [, assistant, result] = out.messages as Array<{ content: Array<Record<string, unknown>> }>;
    const use = assistant!.content[0]!;
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(result).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18C' }] });
  });

  test('thinking blocks in content_blocks are replayed only when strict is false', () => {
    const assistant = {
      role: 'assistant',
      content: 'Answer.',
      content_blocks: [
        { type: 'thinking', thinking: 'Hmm.', signature: 'sig' },
        { type: 'text', text: 'Answer.' },
      ],
    };
    const loose = messages([{ role: 'user', content: 'Q' }, assistant], { strict: false });
    expect((loose.messages as unknown[])[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Hmm.', signature: 'sig' },
        { type: 'text', text: 'Answer.' },
      ],
    });
    const strict = messages([{ role: 'user', content: 'Q' }, assistant]);
    expect((strict.messages as unknown[])[1]).toEqual({ role: 'assistant', content: 'Answer.' });
  });

  test('an unknown role is a 400 naming the message', () => {
    expect(refusal(() => messages([{ role: 'robot', content: 'x' }])).param).toBe('messages[0].role');
  });
});
