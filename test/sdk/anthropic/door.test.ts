import { describe, expect, test } from 'vitest';
import { assembleMessage, chatToMessage, chatToMessagesStream, messagesToChat, replayMessage } from '../../../sdk/anthropic/index.js';
import { schemaErrors } from '../../../server/testing/index.js';
import { sseEvents } from '../../../server/testing/index.js';

const opts = { provider: 'p', cacheControl: true, thinking: false };

describe('messagesToChat: a Messages body as a chat body', () => {
  test('system, blocks, tool use and results (results first), tools, tool_choice and the settings', () => {
    const out = messagesToChat(
      {
        model: 'm',
        max_tokens: 100,
        system: [{ type: 'text', text: 'Be terse.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }, { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }] },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } }] },
          { role: 'user', content: [{ type: 'text', text: 'and?' }, { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'one' }], is_error: true }] },
        ],
        tools: [{ name: 'f', description: 'd', input_schema: { type: 'object', properties: {} } }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        temperature: 0.2,
        top_p: 0.9,
        top_k: 5,
        stop_sequences: ['END'],
        metadata: { user_id: 'u' },
        output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
        thinking: { type: 'enabled', budget_tokens: 1024 },
        stream: true,
      },
      opts,
    );
    expect(out).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Be terse.', cache_control: { type: 'ephemeral' } }] },
        { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }, { type: 'file', file: { file_url: 'https://x/a.pdf' } }] },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'Error: one' },
        { role: 'user', content: 'and?' },
      ],
      max_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop: ['END'],
      user: 'u',
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} }, description: 'd' } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema: { type: 'object' } } },
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  test('cache_control is dropped for targets that do not read it; thinking passed only where allowed', () => {
    const body = { model: 'm', max_tokens: 5, system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'Hi' }], thinking: { type: 'enabled', budget_tokens: 1024 } };
    expect(messagesToChat(body, { ...opts, cacheControl: false })).toMatchObject({ messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'Hi' }] });
    expect(messagesToChat(body, { ...opts, cacheControl: false }).thinking).toBeUndefined();
    expect(messagesToChat(body, { ...opts, thinking: true }).thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
  });

  test.each([
    [{ tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'tools[0].type'],
    [{ messages: [{ role: 'user', content: [{ type: 'search_result', source: 'x' }] }] }, 'messages[0].content[0].type'],
    [{ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }, 'messages[0].content[0].source'],
    [{ tool_choice: { type: 'sometimes' } }, 'tool_choice'],
  ])('refused with a 400 naming the field: %j', (fields, param) => {
    expect(() => messagesToChat({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }], ...fields }, opts)).toThrow(expect.objectContaining({ status: 400, param }));
  });
});

describe('chatToMessage and the event stream', () => {
  test('a chat answer as a message: text, tool_use with parsed input, stop reason, usage with cache reads apart', () => {
    const m = chatToMessage(
      {
        model: 'gpt',
        choices: [{ finish_reason: 'tool_calls', message: { content: 'Hi', tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{"a":1}' } }, { id: 'c2', function: { name: 'g', arguments: 'not json' } }] } }],
        usage: { prompt_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 6 } },
      },
      'fallback',
    );
    expect(schemaErrors('messages.json#/$defs/Message', m)).toEqual([]);
    expect(m.content).toEqual([
      { type: 'text', text: 'Hi' },
      { type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } },
      { type: 'tool_use', id: 'c2', name: 'g', input: {} },
    ]);
    expect(m.stop_reason).toBe('tool_use');
    expect(m.usage).toEqual({ input_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 6, output_tokens: 4 });
    expect(chatToMessage({ choices: [{ finish_reason: 'length', message: { content: 'x' } }] }, 'm').stop_reason).toBe('max_tokens');
  });

  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ model: 'gpt', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const stream = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: 'Hé' }),
    chunk({ content: 'llo' }),
    chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
    chunk({}, 'tool_calls'),
    `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } })}\n\n`,
    'data: [DONE]\n\n',
  ].join('');

  test.each([1, 5, 1000])('a chat stream cut every %i bytes → the same valid events, assembled into the whole message', (size) => {
    const t = chatToMessagesStream('m');
    const bytes = Buffer.from(stream);
    let out = t.start();
    for (let i = 0; i < bytes.length; i += size) out += t.push(bytes.subarray(i, i + size));
    out += t.end();
    const events = sseEvents(out);
    for (const e of events) expect(schemaErrors('messages.json#/$defs/StreamEvent', e.data)).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const message = assembleMessage(out)!;
    expect(schemaErrors('messages.json#/$defs/Message', message)).toEqual([]);
    expect(message.content).toEqual([
      { type: 'text', text: 'Héllo' },
      { type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage).toMatchObject({ input_tokens: 3, cache_read_input_tokens: 2, output_tokens: 3 });
  });

  test('an in-band error, or a stream cut short: an error event, and nothing to assemble', () => {
    const t = chatToMessagesStream('m');
    const out = t.start() + t.push(Buffer.from(chunk({ content: 'Hel' }) + `data: ${JSON.stringify({ error: { message: 'boom', type: 'server_error' } })}\n\n`)) + t.end();
    expect(sseEvents(out).at(-1)!.data).toEqual({ type: 'error', error: { type: 'server_error', message: 'boom' } });
    expect(assembleMessage(out)).toBeNull();
    const cut = chatToMessagesStream('m');
    expect(sseEvents(cut.start() + cut.push(Buffer.from(chunk({ content: 'Hel' }))) + cut.end()).at(-1)!.event).toBe('error');
  });

  test('replayMessage then assembleMessage gives back the message', () => {
    const m = chatToMessage({ model: 'm', choices: [{ finish_reason: 'tool_calls', message: { content: 'Hi', tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{"a":1}' } }] } }], usage: { prompt_tokens: 3, completion_tokens: 2 } }, 'm');
    expect(assembleMessage(replayMessage(m))).toEqual(m);
  });
});
