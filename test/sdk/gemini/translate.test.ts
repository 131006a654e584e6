import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../../core/index.js';
import { mimeFromUrl, modelName, toGeminiSchema } from '../../../sdk/gemini/parts.js';
import { fromGeminiResponse, geminiFinish, geminiUsage, toGeminiRequest } from '../../../sdk/gemini/translate.js';

const opts = { provider: 'google', stream: false, strict: true };
const map = (body: Record<string, unknown>, o: Partial<typeof opts> = {}) => toGeminiRequest(body, { ...opts, ...o }) as Record<string, any>;
const user = (content: unknown) => ({ role: 'user', content });

function refused(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return err as GatewayError;
  }
  throw new Error('expected a 400');
}

describe('request: messages', () => {
  test('system and developer messages → systemInstruction; user/assistant → user/model', () => {
    const out = map({
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'No emojis.' }] },
        user('Hi'),
        { role: 'assistant', content: 'Hello.' },
        user('Bye'),
      ],
    });
    expect(out.systemInstruction).toEqual({ parts: [{ text: 'Be terse.' }, { text: 'No emojis.' }] });
    expect(out.contents).toEqual([
      { role: 'user', parts: [{ text: 'Hi' }] },
      { role: 'model', parts: [{ text: 'Hello.' }] },
      { role: 'user', parts: [{ text: 'Bye' }] },
    ]);
    expect(out.generationConfig).toBeUndefined();
    expect(out.model).toBeUndefined();
  });

  test('consecutive same-role turns are merged', () => {
    const out = map({ messages: [user('a'), user([{ type: 'text', text: 'b' }]), { role: 'assistant', content: 'c' }, { role: 'assistant', content: 'd' }] });
    expect(out.contents).toEqual([
      { role: 'user', parts: [{ text: 'a' }, { text: 'b' }] },
      { role: 'model', parts: [{ text: 'c' }, { text: 'd' }] },
    ]);
  });

  test('media parts: data URL → inlineData, http(s)/gs URL → fileData with a MIME type from the extension, audio, files', () => {
    const out = map({
      messages: [
        user([
          { type: 'image_url', image_url: { url: 'data:image/webp;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://x.test/a/cat.JPG?size=1#f' } },
          { type: 'image_url', image_url: { url: 'https://x.test/photo' } },
          { type: 'image_url', image_url: { url: 'gs://bucket/doc.pdf' } },
          { type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' } },
        ]),
      ],
    });
    expect(out.contents[0].parts).toEqual([
      { inlineData: { mimeType: 'image/webp', data: 'AAAA' } },
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://x.test/a/cat.JPG?size=1#f' } },
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://x.test/photo' } },
      { fileData: { mimeType: 'application/pdf', fileUri: 'gs://bucket/doc.pdf' } },
      { inlineData: { mimeType: 'audio/wav', data: 'UklG' } },
      { inlineData: { mimeType: 'application/pdf', data: 'JVBE' } },
    ]);
    expect(mimeFromUrl('https://x.test/a.b/c', 'image/jpeg')).toBe('image/jpeg');
    expect(mimeFromUrl('https://x.test/c.png', 'image/jpeg')).toBe('image/png');
  });

  test('a non-base64 data URL, a relative URL and an unknown part type are 400s naming the part', () => {
    expect(refused(() => map({ messages: [user([{ type: 'image_url', image_url: { url: 'data:text/plain,hello' } }])] })).param).toBe('messages[0].content[0].image_url.url');
    expect(refused(() => map({ messages: [user([{ type: 'image_url', image_url: { url: '/cat.png' } }])] })).param).toBe('messages[0].content[0].image_url.url');
    const e = refused(() => map({ messages: [user([{ type: 'video', video: {} }])] }));
    expect(e.param).toBe('messages[0].content[0].type');
    expect(e.message).toContain('google');
  });

  test('assistant tool_calls → functionCall parts with object args; the tool result gets the name of the call it answers', () => {
    const out = map({
      messages: [
        user('Weather and time?'),
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_w', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_t', content: '{"time":"12:00"}' },
        { role: 'tool', tool_call_id: 'call_w', content: [{ type: 'text', text: '18C' }] },
      ],
    });
    expect(out.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather and time?' }] },
      {
        role: 'model',
        parts: [{ text: 'Checking.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_time', args: {} } }],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_time', response: { output: { time: '12:00' } } } },
          { functionResponse: { name: 'get_weather', response: { output: '18C' } } },
        ],
      },
    ]);
  });

  test('the name lookup uses the latest assistant turn that issued the id; an unknown id is a 400', () => {
    const call = (id: string, name: string) => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }] });
    const out = map({ messages: [user('a'), call('x', 'first'), { role: 'tool', tool_call_id: 'x', content: '1' }, call('x', 'second'), { role: 'tool', tool_call_id: 'x', content: '2' }] });
    expect(out.contents[2].parts[0].functionResponse.name).toBe('first');
    expect(out.contents[4].parts[0].functionResponse.name).toBe('second');
    expect(refused(() => map({ messages: [user('a'), { role: 'tool', tool_call_id: 'nope', content: '1' }] })).param).toBe('messages[1].tool_call_id');
  });

  test('tool call arguments that are not a JSON object are a 400 naming them', () => {
    const bad = (args: string) => map({ messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }] }] });
    expect(refused(() => bad('{nope')).param).toBe('messages[0].tool_calls[0].function.arguments');
    expect(refused(() => bad('[1]')).param).toBe('messages[0].tool_calls[0].function.arguments');
  });

  test('an unknown role is a 400', () => {
    expect(refused(() => map({ messages: [{ role: 'robot', content: 'x' }] })).param).toBe('messages[0].role');
  });
});

describe('request: generationConfig, tools, thinking', () => {
  test('sampling fields, max tokens precedence, stop string → array, n → candidateCount', () => {
    const out = map({ messages: [user('a')], temperature: 0.3, top_p: 0.9, max_tokens: 10, max_completion_tokens: 20, stop: 'END', n: 3, seed: 7, presence_penalty: 0.5, frequency_penalty: -0.5 });
    expect(out.generationConfig).toEqual({ temperature: 0.3, topP: 0.9, maxOutputTokens: 20, stopSequences: ['END'], candidateCount: 3, seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5 });
    expect(map({ messages: [user('a')], max_tokens: 10, stop: ['a', 'b'] }).generationConfig).toEqual({ maxOutputTokens: 10, stopSequences: ['a', 'b'] });
  });

  test('n > 1 on a stream is a 400 naming n', () => {
    const e = refused(() => map({ messages: [user('a')], n: 2 }, { stream: true }));
    expect(e.param).toBe('n');
    expect(e.message).toContain('google');
  });

  test('response_format json_object and json_schema', () => {
    expect(map({ messages: [user('a')], response_format: { type: 'json_object' } }).generationConfig).toEqual({ responseMimeType: 'application/json' });
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false, $schema: 'x' };
    expect(map({ messages: [user('a')], response_format: { type: 'json_schema', json_schema: { name: 'a', strict: true, schema } } }).generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
    });
    expect(map({ messages: [user('a')], response_format: { type: 'text' } }).generationConfig).toBeUndefined();
  });

  test('tools → one Tool with all functionDeclarations (schemas reduced); tool_choice → functionCallingConfig', () => {
    const tools = [
      { type: 'function', function: { name: 'a', description: 'A', parameters: { type: 'object', properties: { x: { type: ['string', 'null'] } }, additionalProperties: false } } },
      { type: 'function', function: { name: 'b' } },
    ];
    const out = map({ messages: [user('a')], tools, tool_choice: 'auto' });
    expect(out.tools).toEqual([
      { functionDeclarations: [{ name: 'a', description: 'A', parameters: { type: 'object', properties: { x: { type: 'string', nullable: true } } } }, { name: 'b' }] },
    ]);
    expect(out.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(map({ messages: [user('a')], tools, tool_choice: 'none' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(map({ messages: [user('a')], tools, tool_choice: 'required' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(map({ messages: [user('a')], tools, tool_choice: { type: 'function', function: { name: 'b' } } }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['b'] },
    });
    expect(refused(() => map({ messages: [user('a')], tools: [{ type: 'web_search' }] })).param).toBe('tools[0].type');
  });

  test('thinking: a 400 naming it under strict_reference_compliance, thinkingConfig otherwise', () => {
    const body = { messages: [user('a')], thinking: { type: 'enabled', budget_tokens: 2048 } };
    const e = refused(() => map(body));
    expect(e.param).toBe('thinking');
    expect(map(body, { strict: false }).generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } });
    expect(map({ ...body, thinking: { type: 'disabled' } }, { strict: false }).generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 0 } });
    expect(map({ ...body, thinking: { type: 'enabled' } }, { strict: false }).generationConfig).toEqual({ thinkingConfig: { includeThoughts: true } });
  });

  test('JSON Schema reduction: $ref inlined, oneOf → anyOf, const → enum, unknown keywords dropped', () => {
    const schema = {
      type: 'object',
      $defs: { City: { type: 'string', description: 'A city', minLength: 1 } },
      properties: {
        city: { $ref: '#/$defs/City' },
        unit: { const: 'C' },
        either: { oneOf: [{ type: 'integer' }, { type: 'null' }] },
        list: { type: 'array', items: { $ref: '#/$defs/City' }, uniqueItems: true },
        loop: { $ref: '#/$defs/Missing' },
      },
    };
    expect(toGeminiSchema(schema)).toEqual({
      type: 'object',
      properties: {
        city: { type: 'string', description: 'A city', minLength: 1 },
        unit: { enum: ['C'] },
        either: { nullable: true, anyOf: [{ type: 'integer' }] },
        list: { type: 'array', items: { type: 'string', description: 'A city', minLength: 1 } },
        loop: {},
      },
    });
  });

  test('model names: models/ prefix dropped, unsafe characters refused', () => {
    expect(modelName({ model: 'models/gemini-2.5-pro' }, 'google')).toBe('gemini-2.5-pro');
    expect(modelName({ model: 'claude-sonnet-4-5@20250929' }, 'vertex-ai')).toBe('claude-sonnet-4-5@20250929');
    expect(refused(() => modelName({ model: 'a/../b' }, 'google')).param).toBe('model');
    expect(refused(() => modelName({ model: 'gemini:streamGenerateContent' }, 'google')).param).toBe('model');
    expect(refused(() => modelName({}, 'google')).param).toBe('model');
  });
});

describe('response', () => {
  test.each([
    ['STOP', false, 'stop'],
    ['STOP', true, 'tool_calls'],
    ['MAX_TOKENS', false, 'length'],
    ['MAX_TOKENS', true, 'length'],
    ['SAFETY', false, 'content_filter'],
    ['BLOCKLIST', false, 'content_filter'],
    ['PROHIBITED_CONTENT', false, 'content_filter'],
    ['SPII', false, 'content_filter'],
    ['IMAGE_SAFETY', false, 'content_filter'],
    ['RECITATION', false, 'content_filter'],
    ['LANGUAGE', false, 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', false, 'stop'],
    ['OTHER', false, 'stop'],
    ['FINISH_REASON_UNSPECIFIED', false, 'stop'],
    [undefined, false, null],
    ['', false, null],
  ] as const)('finishReason %s (calls: %s) → %s', (reason, calls, expected) => {
    expect(geminiFinish(reason, calls)).toBe(expected);
  });

  test('usage: prompt includes tool-use prompt tokens, completion includes thoughts; cached and reasoning always reported', () => {
    expect(geminiUsage({ promptTokenCount: 120, candidatesTokenCount: 25, thoughtsTokenCount: 40, cachedContentTokenCount: 64, toolUsePromptTokenCount: 5, totalTokenCount: 190 })).toEqual({
      prompt_tokens: 125,
      completion_tokens: 65,
      total_tokens: 190,
      prompt_tokens_details: { cached_tokens: 64 },
      completion_tokens_details: { reasoning_tokens: 40 },
    });
    expect(geminiUsage({ promptTokenCount: 9, candidatesTokenCount: 2 })).toEqual({
      prompt_tokens: 9,
      completion_tokens: 2,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
    expect(geminiUsage(undefined)).toBeNull();
  });

  test('usage: audio and image prompt tokens by modality, less what was read from a cache; audio output', () => {
    const usage = geminiUsage({
      promptTokenCount: 10_000,
      cachedContentTokenCount: 3_000,
      candidatesTokenCount: 500,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 5_000 }, { modality: 'AUDIO', tokenCount: 4_000 }, { modality: 'IMAGE', tokenCount: 1_000 }],
      cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 2_000 }, { modality: 'AUDIO', tokenCount: 1_000 }],
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 300 }],
    });
    expect(usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 3_000, audio_tokens: 3_000, image_tokens: 1_000 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 300 },
    });
  });

  const answer = {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ text: 'Thinking…', thought: true }, { text: 'Let me ' }, { text: 'check.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'sig' }],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 3 },
    modelVersion: 'gemini-2.5-flash-001',
    createTime: '2025-06-01T12:00:00.123456Z',
  };

  test('text joined, function calls → tool calls with ids derived from the response id, finish tool_calls, modelVersion and createTime', () => {
    const { completion, usage } = fromGeminiResponse(answer, { model: 'gemini-2.5-flash', strict: true, id: 'chatcmpl-abc' });
    expect(completion).toEqual({
      id: 'chatcmpl-abc',
      object: 'chat.completion',
      created: Math.floor(Date.parse('2025-06-01T12:00:00.123456Z') / 1000),
      model: 'gemini-2.5-flash-001',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Let me check.',
            refusal: null,
            tool_calls: [{ id: 'call_abc_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 8, total_tokens: 18, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 3 } },
    });
    expect(usage?.completion_tokens).toBe(8);
  });

  test('thought parts go to content_blocks only when not strict', () => {
    const { completion } = fromGeminiResponse(answer, { model: 'm', strict: false, id: 'chatcmpl-abc' });
    expect((completion.choices as any[])[0].message.content_blocks).toEqual([
      { type: 'thinking', thinking: 'Thinking…' },
      { type: 'text', text: 'Let me ' },
      { type: 'text', text: 'check.' },
    ]);
  });

  test('one choice per candidate, by index; the requested model when no modelVersion; a synthesised id', () => {
    const { completion } = fromGeminiResponse(
      {
        candidates: [
          { content: { parts: [{ text: 'B' }] }, finishReason: 'MAX_TOKENS', index: 1 },
          { content: { parts: [{ text: 'A' }] }, finishReason: 'STOP', index: 0 },
        ],
      },
      { model: 'gemini-x', strict: true },
    );
    expect(completion.model).toBe('gemini-x');
    expect(String(completion.id)).toMatch(/^chatcmpl-/);
    expect((completion.choices as any[]).map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, 'A', 'stop'],
      [1, 'B', 'length'],
    ]);
    expect(completion.usage).toBeUndefined();
  });

  test('a blocked prompt (promptFeedback, no candidates) → content_filter with no content', () => {
    const { completion } = fromGeminiResponse({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 4 } }, { model: 'm', strict: true });
    expect((completion.choices as any[])[0]).toMatchObject({ index: 0, message: { content: null }, finish_reason: 'content_filter' });
  });

  test('a candidate blocked mid-answer has no content and content_filter', () => {
    const { completion } = fromGeminiResponse({ candidates: [{ finishReason: 'SAFETY', index: 0 }] }, { model: 'm', strict: true });
    expect((completion.choices as any[])[0]).toMatchObject({ message: { content: null }, finish_reason: 'content_filter' });
  });
});
