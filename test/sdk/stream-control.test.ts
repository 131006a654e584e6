import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { GatewayError, readResponseBody, RequestContext, sourceOf } from '../../core/index.js';
import { onlyString } from '../../sdk/stream-control/doors.js';
import { STREAM_CUT, StreamControl, doorStreamOf, type StreamWatcher } from '../../sdk/index.js';

const chunk = (content: string) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

function ctxOf(): RequestContext {
  // The smallest context the control reads: state, log fields, a logger for a failing watcher.
  const ctx = Object.create(RequestContext.prototype) as RequestContext;
  Object.assign(ctx, { state: new Map(), logFields: {}, error: null });
  Object.defineProperty(ctx, 'log', { value: { error: () => undefined } });
  return ctx;
}

async function run(parts: string[], watchers: StreamWatcher[] = [], route = 'chat.completions') {
  const source = Readable.from(parts.map((p) => Buffer.from(p)));
  const ctx = ctxOf();
  const control = new StreamControl(ctx, sourceOf(source), doorStreamOf(route));
  for (const w of watchers) control.watch(w);
  let out = '';
  out += (await readResponseBody(control.output)).toString();
  return { out, ctx, control };
}

const textOf = (sse: string) =>
  sse
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => JSON.parse(b.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');

describe('stream control', () => {
  test('unwatched events go out byte for byte, however the chunks cut them; comments too', async () => {
    const sse = `${chunk('Hel')}: keep-alive\n\n${chunk('lo "quoted" \\u00e9')}data: [DONE]\n\n`;
    const parts = [sse.slice(0, 7), sse.slice(7, 50), sse.slice(50, 51), sse.slice(51)];
    const { out, control } = await run(parts);
    expect(out).toBe(sse);
    // The JSON value is the six characters \u00e9 (its backslash escaped), and is read as such.
    expect(control.text).toBe('Hello "quoted" \\u00e9');
  });

  test('a character whose bytes two chunks split comes out whole', async () => {
    const bytes = Buffer.from(`${chunk('naïve 日本')}data: [DONE]\n\n`);
    const at = bytes.indexOf(Buffer.from('日')) + 1; // inside the character's three bytes
    const source = Readable.from([bytes.subarray(0, at), bytes.subarray(at)]);
    const control = new StreamControl(ctxOf(), sourceOf(source), doorStreamOf('chat.completions'));
    let out = '';
    out += (await readResponseBody(control.output)).toString();
    expect(out).toBe(bytes.toString());
    expect(control.text).toBe('naïve 日本');
  });

  test('\\r\\n line ends are read by the full parser and sent re-serialized', async () => {
    const { out, control } = await run([`data: {"choices":[{"delta":{"content":"a"}}]}\r\n\r\n`, `data: {"choices":[{"delta":{"content":"b"}}]}\r\n\r\ndata: [DONE]\r\n\r\n`]);
    expect(control.text).toBe('ab');
    expect(out).toBe('data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choices":[{"delta":{"content":"b"}}]}\n\ndata: [DONE]\n\n');
  });

  test('a stream that ends without [DONE] gets it', async () => {
    const { out } = await run([chunk('x')]);
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  test('a redaction across events: the replacement where the span starts, the rest of it dropped', async () => {
    const hold: StreamWatcher = {
      releasable: (v) => (v.ended ? Infinity : 0),
      scan(v) {
        if (!v.ended) return;
        const at = v.text.indexOf('4111');
        v.redact(at, at + 9, '[CARD]');
      },
    };
    const { out } = await run([chunk('card 41'), chunk('11 11'), chunk('11 end'), 'data: [DONE]\n\n'], [hold]);
    expect(textOf(out)).toBe('card [CARD] end');
    expect(out).not.toMatch(/41|11/);
  });

  test('a cut: the door terminal error, nothing held goes out, the cut recorded, the source destroyed', async () => {
    const source = Readable.from([chunk('one '), chunk('two '), chunk('three ')].map((s) => Buffer.from(s)));
    const ctx = ctxOf();
    const control = new StreamControl(ctx, sourceOf(source), doorStreamOf('chat.completions'));
    control.watch({
      releasable: () => Infinity,
      scan(v) {
        if (v.text.includes('two')) v.cut(new GatewayError('upstream_timeout', 'Stop.'), { reason: 'test', by: 'me' });
      },
    });
    let out = '';
    out += (await readResponseBody(control.output)).toString();
    expect(out).toContain('"content":"one "');
    expect(out).not.toContain('two');
    expect(out.endsWith('\n\n')).toBe(true);
    const blocks = out.trim().split('\n\n');
    expect(blocks.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(blocks.at(-2)!.slice(6)).error).toEqual({ message: 'Stop. The stream was cut after 4 characters of answer text.', type: 'timeout_error', param: null, code: 'upstream_timeout' });
    expect(ctx.get(STREAM_CUT)).toEqual({ reason: 'test', by: 'me', code: 'upstream_timeout', chars_sent: 4 });
    expect(ctx.error?.code).toBe('upstream_timeout');
    expect(source.destroyed).toBe(true);
  });

  test('a watcher that throws ends the stream with an internal error rather than letting it go on unchecked', async () => {
    const { out, ctx } = await run([chunk('a'), chunk('b'), 'data: [DONE]\n\n'], [{ releasable: () => Infinity, scan: () => { throw new Error('bug'); } }]);
    expect(out).toContain('"code":"internal_error"');
    expect(ctx.get(STREAM_CUT)?.reason).toBe('watcher_error');
  });
});

describe('onlyString: a string value read without parsing the event', () => {
  test('the one value, escapes decoded; absent; several or unterminated: parse it whole', () => {
    expect(onlyString('{"delta":{"content":"a\\"b\\n"}}', '"content":"')).toBe('a"b\n');
    expect(onlyString('{"delta":{"content":"plain"}}', '"content":"')).toBe('plain');
    expect(onlyString('{"delta":{"content":null}}', '"content":"')).toBeNull();
    expect(onlyString('{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}', '"content":"')).toBeUndefined();
    expect(onlyString('{"delta":{"content":"open', '"content":"')).toBeUndefined();
    // A key's quotes inside a value are escaped: not a match.
    expect(onlyString('{"delta":{"content":"say \\"content\\":\\"x\\""}}', '"content":"')).toBe('say "content":"x"');
  });
});
