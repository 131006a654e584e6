import { describe, expect, test } from 'vitest';
import { chatToResponsesStream, fromChatCompletion, inputItems, replayResponse, toChatRequest } from '../../../sdk/responses/index.js';
import { fitConversation } from '../../../plugins/responses/truncate.js';
import { schemaErrors } from '../../../server/testing/index.js';
import { sseEvents } from '../../../server/testing/index.js';

const chat = (body: Record<string, unknown>, history: Record<string, unknown>[] = []) =>
  toChatRequest(body, { provider: 'p', history, input: inputItems(body.input) });

describe('toChatRequest: a Responses body as a chat body', () => {
  test('instructions first, items in order, function calls joined to the assistant message before them', () => {
    const out = chat({
      model: 'm',
      instructions: 'Be terse.',
      input: [
        { role: 'developer', content: 'Dev note.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Hi' }, { type: 'input_image', image_url: 'data:image/png;base64,AA==', detail: 'low' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
        { type: 'reasoning', id: 'rs_1', summary: [] },
      ],
    });
    expect(out.messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'developer', content: 'Dev note.' },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==', detail: 'low' } }] },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
          { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'two' }] },
    ]);
  });

  test('settings: tools, tool_choice, parallel_tool_calls, text.format, reasoning.effort, max_output_tokens, sampling, user, stream with usage, logprobs', () => {
    const out = chat({
      model: 'm',
      input: 'Hi',
      tools: [{ type: 'function', name: 'f', description: 'd', parameters: { type: 'object', properties: {} }, strict: true }],
      tool_choice: { type: 'function', name: 'f' },
      parallel_tool_calls: false,
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning: { effort: 'low' },
      max_output_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u1',
      stream: true,
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
      metadata: { a: 'b' },
      store: true,
      truncation: 'auto',
    });
    expect(out).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: {} }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning_effort: 'low',
      max_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u1',
      logprobs: true,
      top_logprobs: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(chat({ model: 'm', input: 'x', text: { format: { type: 'json_object' } } }).response_format).toEqual({ type: 'json_object' });
  });

  test.each([
    [{ tools: [{ type: 'file_search', vector_store_ids: ['v'] }] }, 'tools[0].type'],
    [{ background: true }, 'background'],
    [{ prompt: { id: 'p' } }, 'prompt'],
    [{ input: [{ type: 'computer_call_output', call_id: 'c' }] }, 'input[0].type'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] }, 'input[0].content[0].image_url'],
    [{ tool_choice: { type: 'web_search_preview' } }, 'tool_choice'],
    [{ text: { format: { type: 'json_schema' } } }, 'text.format.schema'],
  ])('refused with a 400 naming the field: %j', (fields, param) => {
    const tools = 'tool_choice' in fields ? { tools: [{ type: 'function', name: 'f' }] } : {};
    expect(() => chat({ model: 'm', input: 'Hi', ...tools, ...fields })).toThrow(expect.objectContaining({ status: 400, param }));
  });
});

describe('fromChatCompletion: a chat answer as a response object', () => {
  const meta = { id: 'resp_1', createdAt: 1700000000, request: { model: 'm', input: 'Hi', metadata: { k: 'v' } }, model: 'm' };

  test('text with logprobs, a refusal, reasoning, tool calls, usage; valid against the schema', () => {
    const r = fromChatCompletion(
      {
        model: 'm-2025',
        choices: [
          {
            index: 0,
            finish_reason: 'tool_calls',
            logprobs: { content: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }] },
            message: { role: 'assistant', content: 'Hi', refusal: 'No.', reasoning_content: 'Thinking.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 1 } },
      },
      meta,
    );
    expect(schemaErrors('responses.json#/$defs/Response', r)).toEqual([]);
    expect(r.model).toBe('m-2025');
    expect(r.status).toBe('completed');
    expect(r.metadata).toEqual({ k: 'v' });
    expect((r.output as any[]).map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect((r.output as any[])[1].content).toEqual([
      { type: 'output_text', text: 'Hi', annotations: [], logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }] },
      { type: 'refusal', refusal: 'No.' },
    ]);
    expect((r.output as any[])[2]).toMatchObject({ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', status: 'completed' });
    expect(r.usage).toEqual({ input_tokens: 5, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 8 });
  });

  test('thinking blocks (a non-strict Anthropic or Gemini answer read whole) become the reasoning item; the summary setting is echoed under both names', () => {
    const r = fromChatCompletion(
      { choices: [{ finish_reason: 'stop', message: { content: 'Blue.', content_blocks: [{ type: 'thinking', thinking: 'Rayleigh ', signature: 's' }, { type: 'thinking', thinking: 'scattering.' }, { type: 'text', text: 'Blue.' }] } }] },
      { ...meta, request: { ...meta.request, reasoning: { effort: 'high', generate_summary: 'concise' } } },
    );
    expect(schemaErrors('responses.json#/$defs/Response', r)).toEqual([]);
    expect((r.output as any[])[0]).toMatchObject({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Rayleigh scattering.' }] });
    expect((r.output as any[]).map((o) => o.type)).toEqual(['reasoning', 'message']);
    expect(r.reasoning).toEqual({ effort: 'high', summary: 'concise', generate_summary: 'concise' });
  });

  test.each([
    ['length', 'max_output_tokens'],
    ['content_filter', 'content_filter'],
  ])('finish %s → incomplete, reason %s', (finish, reason) => {
    const r = fromChatCompletion({ choices: [{ finish_reason: finish, message: { content: 'x' } }] }, meta);
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason });
    expect((r.output as any[])[0].status).toBe('incomplete');
  });
});

describe('chatToResponsesStream: chat chunks as Responses events', () => {
  const meta = { id: 'resp_s', createdAt: 1, request: { model: 'm' }, model: 'm' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm-up', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const stream = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ reasoning_content: 'Hmm.' }),
    chunk({ content: 'Hé' }),
    chunk({ content: 'llo' }),
    chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
    chunk({}, 'tool_calls'),
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'm-up', choices: [], usage: { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 } })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');

  test.each([1, 3, 7, 1000])('cut every %i bytes (inside characters, lines and events): the same valid events', (size) => {
    const t = chatToResponsesStream(meta);
    const bytes = Buffer.from(stream);
    let out = t.start();
    for (let i = 0; i < bytes.length; i += size) out += t.push(bytes.subarray(i, i + size));
    out += t.end();
    const events = sseEvents(out);
    for (const e of events) expect(schemaErrors('responses.json#/$defs/ResponseStreamEvent', e.data)).toEqual([]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const done = events.at(-1)!.data.response;
    expect(done.model).toBe('m-up');
    expect(done.output.map((o: any) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(done.output[1].content[0].text).toBe('Héllo');
    expect(done.output[2].arguments).toBe('{"a":1}');
    expect(done.usage).toMatchObject({ input_tokens: 4, output_tokens: 6, total_tokens: 10 });
  });

  test('an in-band error: error and response.failed, the text so far kept', () => {
    const t = chatToResponsesStream(meta);
    const out = t.start() + t.push(Buffer.from(chunk({ content: 'Hel' }) + `data: ${JSON.stringify({ error: { message: 'boom', type: 'overloaded_error' } })}\n\n`)) + t.end();
    const events = sseEvents(out);
    expect(events.at(-2)!.data).toMatchObject({ type: 'error', code: 'overloaded_error', message: 'boom' });
    expect(events.at(-1)!.data.response).toMatchObject({ status: 'failed', error: { code: 'overloaded_error', message: 'boom' } });
    expect(events.at(-1)!.data.response.output[0]).toMatchObject({ status: 'incomplete', content: [{ type: 'output_text', text: 'Hel' }] });
  });

  test('a stream cut short (no finish, no [DONE]) fails; one with a finish but no [DONE] completes', () => {
    const cut = chatToResponsesStream(meta);
    expect(sseEvents(cut.start() + cut.push(Buffer.from(chunk({ content: 'Hel' }))) + cut.end()).at(-1)!.event).toBe('response.failed');
    const whole = chatToResponsesStream(meta);
    expect(sseEvents(whole.start() + whole.push(Buffer.from(chunk({ content: 'Hi' }, 'stop'))) + whole.end()).at(-1)!.event).toBe('response.completed');
  });

  test('replayResponse: a stored object as events ending with the same object (ids kept)', () => {
    const object = fromChatCompletion({ choices: [{ finish_reason: 'stop', message: { content: 'Hi', tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{}' } }] } }], usage: { prompt_tokens: 1, completion_tokens: 1 } }, { ...meta, model: 'm' });
    const events = sseEvents(replayResponse(object));
    for (const e of events) expect(schemaErrors('responses.json#/$defs/ResponseStreamEvent', e.data)).toEqual([]);
    expect(events.at(-1)!.data.response).toEqual(object);
  });
});

describe('fitConversation', () => {
  const msg = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
  const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' });
  const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'x'.repeat(400) });

  test('fits: unchanged; disabled and too long: does not fit', () => {
    expect(fitConversation({ history: [msg('a')], input: [msg('b')], fixed: null, reserve: 0, window: 1000, mode: 'disabled' })).toMatchObject({ fits: true, dropped: 0 });
    expect(fitConversation({ history: [msg('a'.repeat(4000))], input: [msg('b')], fixed: null, reserve: 0, window: 500, mode: 'disabled' }).fits).toBe(false);
  });

  test('auto drops from the middle, a call with its output, keeping the first and the last item', () => {
    const history = [msg('first'), call('c1'), output('c1'), msg('y'.repeat(400)), call('c2'), output('c2')];
    const r = fitConversation({ history, input: [msg('last')], fixed: null, reserve: 50, window: 200, mode: 'auto' });
    expect(r.fits).toBe(true);
    if (!r.fits) return;
    const kept = [...r.history, ...r.input];
    expect(kept[0]).toEqual(msg('first'));
    expect(kept.at(-1)).toEqual(msg('last'));
    // No call without its output, no output without its call.
    const ids = (type: string) => kept.filter((i: any) => i.type === type).map((i: any) => i.call_id).sort();
    expect(ids('function_call')).toEqual(ids('function_call_output'));
    expect(r.dropped).toBeGreaterThan(0);
  });
});
