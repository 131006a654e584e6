import { describe, expect, test } from 'vitest';
import { converseStreamTranslator } from '../../../../plugins/providers/bedrock/answer.js';
import { EventStreamDecoder, EventStreamError, encodeMessage } from '../../../../plugins/providers/bedrock/eventstream.js';

/** Hex frames from shared/providers/bedrock.md §5a/§5c. */
const MESSAGE_START =
  '000000880000005261d114e20b3a6576656e742d7479706507000c6d65737361676553746172740d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b2270223a226162636465666768696a6b222c22726f6c65223a22617373697374616e74227db7f56ac9';
const DELTA =
  '000000a2000000579acad7c80b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b2274657874223a2248656c6c6f227d2c2270223a2261626364227d1ee2dd14';
const THROTTLING =
  '000000b2000000613590d5d30f3a657863657074696f6e2d747970650700137468726f74746c696e67457863657074696f6e0d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d74797065070009657863657074696f6e7b226d657373616765223a22546f6f206d616e792072657175657374732c20706c656173652077616974206265666f726520747279696e6720616761696e2e227de8ffb26a';
const SMITHY_VECTOR = '0000003d0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b27666f6f273a27626172277d8d9c08b1';
const EMPTY = '000000100000000005c248eb7d98c8ff';

const b = (h: string) => Buffer.from(h, 'hex');

describe('event-stream framing', () => {
  test('decodes the documented frames, headers and payloads', () => {
    const d = new EventStreamDecoder();
    const out = d.push(Buffer.concat([b(MESSAGE_START), b(DELTA), b(THROTTLING), b(SMITHY_VECTOR), b(EMPTY)]));
    expect(out.map((m) => m.headers[':event-type'] ?? m.headers[':exception-type'] ?? m.headers['content-type'] ?? '')).toEqual([
      'messageStart',
      'contentBlockDelta',
      'throttlingException',
      'application/json',
      '',
    ]);
    expect(JSON.parse(out[1]!.payload)).toEqual({ contentBlockIndex: 0, delta: { text: 'Hello' }, p: 'abcd' });
    expect(out[3]!.payload).toBe("{'foo':'bar'}");
    expect(d.pending).toBe(0);
  });

  test('the encoder reproduces the documented bytes', () => {
    const frame = encodeMessage({ ':event-type': 'messageStart', ':content-type': 'application/json', ':message-type': 'event' }, '{"p":"abcdefghijk","role":"assistant"}');
    expect(Buffer.from(frame).toString('hex')).toBe(MESSAGE_START);
  });

  test('bytes cut anywhere, one at a time: same messages', () => {
    const all = Buffer.concat([b(MESSAGE_START), b(DELTA)]);
    const d = new EventStreamDecoder();
    const out = [];
    for (let i = 0; i < all.length; i++) out.push(...d.push(all.subarray(i, i + 1)));
    expect(out).toHaveLength(2);
    expect(JSON.parse(out[0]!.payload).role).toBe('assistant');
  });

  test.each([
    ['message CRC', (f: Buffer) => (f[f.length - 1]! ^= 1)],
    ['prelude CRC', (f: Buffer) => (f[9]! ^= 1)],
    ['length below the minimum', (f: Buffer) => f.writeUInt32BE(8, 0)],
    ['length above the maximum', (f: Buffer) => f.writeUInt32BE(0x7fffffff, 0)],
  ])('a bad %s throws EventStreamError', (_name, damage) => {
    const frame = Buffer.from(b(DELTA));
    damage(frame);
    expect(() => new EventStreamDecoder().push(frame)).toThrow(EventStreamError);
  });
});

describe('ConverseStream → chat.completion.chunk', () => {
  const run = (chunks: Buffer[], includeUsage = true) => {
    let usage: unknown = null;
    const t = converseStreamTranslator({ id: 'chatcmpl-x', model: 'm', includeUsage, strict: true, onUsage: (u) => (usage = u) });
    let out = '';
    for (const c of chunks) out += t.push(c);
    out += t.end();
    const events = out.split('\n\n').filter((e) => e !== '').map((e) => e.slice(6));
    return { events, usage, out };
  };
  const ev = (type: string, payload: unknown) => Buffer.from(encodeMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, JSON.stringify(payload)));

  test('the documented frames: role, text, then the throttling exception as an error event and [DONE]', () => {
    const { events } = run([b(MESSAGE_START), b(DELTA), b(THROTTLING)]);
    expect(JSON.parse(events[0]!).choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(JSON.parse(events[1]!).choices[0].delta).toEqual({ content: 'Hello' });
    expect(JSON.parse(events[2]!)).toEqual({ error: { message: 'Too many requests, please wait before trying again.', type: 'throttlingException', param: null, code: 'throttlingException' } });
    expect(events.at(-1)).toBe('[DONE]');
    expect(events).toHaveLength(4);
  });

  test('usage with cache reads and writes; finish from stopReason; usage chunk after the finish', () => {
    const { events, usage } = run([
      ev('messageStart', { role: 'assistant' }),
      ev('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hi' } }),
      ev('contentBlockStop', { contentBlockIndex: 0 }),
      ev('messageStop', { stopReason: 'max_tokens' }),
      ev('metadata', { usage: { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 4, cacheWriteInputTokens: 2 } }),
    ]);
    expect(usage).toEqual({ prompt_tokens: 16, completion_tokens: 5, total_tokens: 21, prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 2 } });
    expect(JSON.parse(events[2]!).choices[0].finish_reason).toBe('length');
    expect(JSON.parse(events[3]!).usage).toEqual(usage);
    expect(events[4]).toBe('[DONE]');
  });

  test('a tool without input deltas still gets "{}" arguments', () => {
    const { events } = run([
      ev('messageStart', { role: 'assistant' }),
      ev('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: 't1', name: 'now' } } }),
      ev('contentBlockStop', { contentBlockIndex: 0 }),
      ev('messageStop', { stopReason: 'tool_use' }),
      ev('metadata', { usage: { inputTokens: 1, outputTokens: 1 } }),
    ], false);
    expect(JSON.parse(events[2]!).choices[0].delta.tool_calls[0].function.arguments).toBe('{}');
    expect(JSON.parse(events[3]!).choices[0].finish_reason).toBe('tool_calls');
  });

  test('a bad CRC mid-stream: an error event and [DONE]; later bytes ignored; no throw', () => {
    const bad = Buffer.from(b(DELTA));
    bad[bad.length - 1]! ^= 0xff;
    const { events } = run([b(MESSAGE_START), bad, b(DELTA)]);
    expect(events).toHaveLength(3);
    expect(JSON.parse(events[1]!).error.code).toBe('invalid_event_stream');
    expect(events[2]).toBe('[DONE]');
  });

  test('a body that ends inside a frame, or before messageStop, is an error, not a hang', () => {
    const cut = run([b(MESSAGE_START), b(DELTA).subarray(0, 20)]);
    expect(JSON.parse(cut.events.at(-2)!).error.message).toContain('ended inside a message');
    const early = run([b(MESSAGE_START), b(DELTA)]);
    expect(JSON.parse(early.events.at(-2)!).error.message).toContain('ended before the message was complete');
  });

  test('reasoning deltas only when strict is off', () => {
    const frames = [ev('messageStart', { role: 'assistant' }), ev('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'hmm' } } }), ev('messageStop', { stopReason: 'end_turn' })];
    const t = converseStreamTranslator({ id: 'x', model: 'm', includeUsage: false, strict: false, onUsage: () => {} });
    const out = frames.map((f) => t.push(f)).join('') + t.end();
    expect(out).toContain('"reasoning_content":"hmm"');
    expect(run(frames).out).not.toContain('reasoning_content');
  });
});
