import { describe, expect, test } from 'vitest';
import { createLogger, RequestContext, type BodySource, type ChunkSink, type GatewayResponse, type RouteDefinition } from '../../../core/index.js';
import { recoverStream, runContinuation, STREAM_RECOVERY, USAGE_SEGMENTS, type Continued } from '../../../sdk/index.js';

/**
 * The recovering stream on its own (chat format): how many continuations it makes, an answer that finished
 * before it broke, backpressure and a client that leaves while a continuation streams.
 */
const route = { name: 'chat.completions', method: 'POST', path: '/v1/chat/completions' } as unknown as RouteDefinition;

function ctxOf(): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', {}, new AbortController().signal, createLogger({ level: 'silent' }));
  ctx.route = route;
  ctx.body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] };
  return ctx;
}

const chunk = (id: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

interface Fake {
  response: GatewayResponse;
  aborted: boolean;
  pauses: number;
  resumes: number;
}

/** An upstream answer: `events` one per tick, then a reset (`reset`), a clean end (`end`) or nothing (`hang`). */
function upstream(events: string[], ending: 'reset' | 'end' | 'hang'): Fake {
  const fake: Fake = { response: null as unknown as GatewayResponse, aborted: false, pauses: 0, resumes: 0 };
  const body: BodySource = {
    start(sink: ChunkSink) {
      let i = 0;
      let done = false;
      let paused = false;
      const step = () => {
        if (done || paused) return;
        if (i < events.length) {
          sink.data(Buffer.from(events[i++]!));
          setImmediate(step);
          return;
        }
        if (ending === 'hang') return;
        done = true;
        sink.end(ending === 'end' ? null : Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      };
      setImmediate(step);
      return {
        pause: () => {
          fake.pauses++;
          paused = true;
        },
        resume: () => {
          fake.resumes++;
          if (!paused) return;
          paused = false;
          setImmediate(step);
        },
        abort: (reason) => {
          if (done) return;
          done = true;
          fake.aborted = true;
          sink.end(reason ?? new Error('aborted'));
        },
      };
    },
  };
  fake.response = { status: 200, headers: { 'content-type': 'text/event-stream' }, body, observers: null };
  return fake;
}

/** Reads a body whole: its text and how it ended. */
function read(body: BodySource, onData?: (text: string, flow: { abort(reason?: Error): void }) => boolean | void): Promise<{ text: string; error: Error | null }> {
  return new Promise((resolve) => {
    let text = '';
    const flow = body.start({
      data(c) {
        text += c.toString();
        return onData?.(text, flow);
      },
      end: (error) => resolve({ text, error }),
    });
  });
}

const contentOf = (text: string) =>
  text
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => JSON.parse(b.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');

describe('recoverStream', () => {
  test('max_continuations bounds the continuations: a continuation that breaks again ends the stream', async () => {
    const ctx = ctxOf();
    const first = upstream([chunk('a', { role: 'assistant' }), chunk('a', { content: 'One ' })], 'reset');
    const asked: string[] = [];
    const out = recoverStream(ctx, first.response, {
      max: 1,
      idleMs: 0,
      async next(partial): Promise<Continued> {
        asked.push(partial);
        return { response: upstream([chunk('b', { role: 'assistant' }), chunk('b', { content: 'two ' })], 'reset').response, mode: 'prefill' };
      },
    });
    const { text, error } = await read(out.body as BodySource);
    expect(asked).toEqual(['One ']);
    expect(contentOf(text)).toBe('One two ');
    expect(error?.message).toContain('socket hang up');
    expect(ctx.get(STREAM_RECOVERY)!.breaks.map((b) => [b.reason, b.afterChars, b.outcome])).toEqual([
      ['connection', 4, 'continued'],
      ['connection', 8, 'limit'],
    ]);
    // Both calls broke unreported: each is estimated (4 characters of text each), and the request has their sum.
    expect(ctx.get(USAGE_SEGMENTS)!.map((u) => [u.usage.completion_tokens, u.estimated])).toEqual([[1, true], [1, true]]);
    expect(ctx.usage?.completion_tokens).toBe(2);
  });

  test('with max_continuations 2 the second break is continued too; the ids stay the first call\'s', async () => {
    const ctx = ctxOf();
    const answers = [
      upstream([chunk('b', { role: 'assistant' }), chunk('b', { content: 'two ' })], 'reset'),
      upstream([chunk('c', { role: 'assistant' }), chunk('c', { content: 'three.' }), chunk('c', {}, 'stop'), 'data: [DONE]\n\n'], 'end'),
    ];
    const asked: string[] = [];
    const out = recoverStream(ctx, upstream([chunk('a', { role: 'assistant' }), chunk('a', { content: 'One ' })], 'reset').response, {
      max: 2,
      idleMs: 0,
      async next(partial) {
        asked.push(partial);
        return { response: answers.shift()!.response, mode: 'prefill' };
      },
    });
    const { text, error } = await read(out.body as BodySource);
    expect(error).toBeNull();
    expect(asked).toEqual(['One ', 'One two ']);
    expect(contentOf(text)).toBe('One two three.');
    expect(new Set([...text.matchAll(/"id":"(\w)"/g)].map((m) => m[1]))).toEqual(new Set(['a']));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(ctx.get(STREAM_RECOVERY)!.continuations).toBe(2);
  });

  test('an answer that finished before the break only lacked its closing event: no continuation', async () => {
    const ctx = ctxOf();
    let called = false;
    const out = recoverStream(ctx, upstream([chunk('a', { content: 'Done.' }), chunk('a', {}, 'stop')], 'reset').response, {
      max: 1,
      idleMs: 0,
      async next() {
        called = true;
        return null;
      },
    });
    const { text, error } = await read(out.body as BodySource);
    expect(error).toBeNull();
    expect(called).toBe(false);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(ctx.get(STREAM_RECOVERY)!.breaks[0]!.outcome).toBe('finished');
  });

  test('no target takes the continuation: the break ends the stream as it would have', async () => {
    const ctx = ctxOf();
    const out = recoverStream(ctx, upstream([chunk('a', { content: 'One ' })], 'reset').response, { max: 1, idleMs: 0, next: async () => null });
    const { text, error } = await read(out.body as BodySource);
    expect(contentOf(text)).toBe('One ');
    expect(error?.message).toContain('socket hang up');
    expect(ctx.get(STREAM_RECOVERY)!.breaks[0]!.outcome).toBe('no_target');
    // The first call's usage, estimated, is still the request's.
    expect(ctx.usage?.completion_tokens).toBe(1);
  });

  test('silence past the idle time is a break; the quiet upstream is hung up on', async () => {
    const ctx = ctxOf();
    const quiet = upstream([chunk('a', { content: 'One ' })], 'hang');
    const out = recoverStream(ctx, quiet.response, {
      max: 1,
      idleMs: 50,
      next: async () => ({ response: upstream([chunk('b', { content: 'two.' }), chunk('b', {}, 'stop'), 'data: [DONE]\n\n'], 'end').response, mode: 'prefill' }),
    });
    const { text, error } = await read(out.body as BodySource);
    expect(error).toBeNull();
    expect(contentOf(text)).toBe('One two.');
    expect(quiet.aborted).toBe(true);
    expect(ctx.get(STREAM_RECOVERY)!.breaks[0]!.reason).toBe('idle_timeout');
  });

  test('a client that leaves while the continuation streams aborts the continuation\'s upstream', async () => {
    const ctx = ctxOf();
    const second = upstream([chunk('b', { content: 'two ' }), chunk('b', { content: 'three ' })], 'hang');
    const out = recoverStream(ctx, upstream([chunk('a', { content: 'One ' })], 'reset').response, { max: 1, idleMs: 0, next: async () => ({ response: second.response, mode: 'prefill' }) });
    const { error } = await read(out.body as BodySource, (text, flow) => {
      if (text.includes('two ')) flow.abort();
    });
    expect(error).not.toBeNull();
    expect(second.aborted).toBe(true);
    // The request still used both calls.
    expect(ctx.get(USAGE_SEGMENTS)).toHaveLength(2);
  });

  test('backpressure reaches the upstream being read', async () => {
    const ctx = ctxOf();
    const first = upstream([chunk('a', { content: 'One ' }), chunk('a', { content: 'two ' }), chunk('a', {}, 'stop'), 'data: [DONE]\n\n'], 'end');
    const out = recoverStream(ctx, first.response, { max: 1, idleMs: 0, next: async () => null });
    let paused = false;
    const { text } = await new Promise<{ text: string }>((resolve) => {
      let text = '';
      const flow = (out.body as BodySource).start({
        data(c) {
          text += c.toString();
          if (paused) return true;
          paused = true;
          setTimeout(() => flow.resume(), 20);
          return false;
        },
        end: () => resolve({ text }),
      });
    });
    expect(first.pauses).toBeGreaterThan(0);
    expect(first.resumes).toBeGreaterThan(0);
    expect(contentOf(text)).toBe('One two ');
  });
});

const ev = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;

/** The events of an SSE text: name and parsed data. */
const eventsOf = (text: string) =>
  text
    .trim()
    .split('\n\n')
    .map((b) => ({ name: /^event: (.*)$/m.exec(b)?.[1] ?? null, data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!) as Record<string, any> }));

function doorCtx(name: string, body: Record<string, unknown>): RequestContext {
  const ctx = ctxOf();
  ctx.route = { name, method: 'POST', path: `/v1/${name}` } as unknown as RouteDefinition;
  ctx.body = body;
  return ctx;
}

describe('recoverStream: continuations that open with something else than text', () => {
  test('Messages: a continuation\'s thinking block is left out and its text goes on in the open block', async () => {
    const ctx = doorCtx('messages', { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    const first = upstream(
      [
        ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello there, ' } }),
      ],
      'reset',
    );
    const second = upstream(
      [
        ev('message_start', { message: { id: 'msg_2', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 9, output_tokens: 1 } } }),
        ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Where was I?' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig' } }),
        ev('content_block_stop', { index: 0 }),
        ev('ping', {}),
        ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
        ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'this is the rest.' } }),
        ev('content_block_stop', { index: 1 }),
        ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 6 } }),
        ev('message_stop', {}),
      ],
      'end',
    );
    const out = recoverStream(ctx, first.response, { max: 1, idleMs: 0, next: async () => ({ response: second.response, mode: 'prefill' }) });
    const { text, error } = await read(out.body as BodySource);
    expect(error).toBeNull();
    const events = eventsOf(text);
    expect(events.filter((e) => e.name === 'content_block_start').map((e) => [e.data.index, e.data.content_block.type])).toEqual([[0, 'text']]);
    expect(events.filter((e) => e.name === 'content_block_delta').map((e) => [e.data.index, e.data.delta.text])).toEqual([
      [0, 'Hello there, '],
      [0, 'this is the rest.'],
    ]);
    expect(events.filter((e) => e.name === 'content_block_stop').map((e) => e.data.index)).toEqual([0]);
    expect(text).not.toContain('thinking');
  });

  test('Responses: a continuation\'s reasoning item is left out; the open message item gets the whole text', async () => {
    const ctx = doorCtx('responses', { model: 'm', input: 'hi' });
    let seq = 0;
    const r = (name: string, data: Record<string, unknown>) => ev(name, { sequence_number: seq++, ...data });
    const response = { id: 'resp_1', object: 'response', created_at: 1, model: 'm', status: 'in_progress', output: [] };
    const first = upstream(
      [
        r('response.created', { response }),
        r('response.output_item.added', { output_index: 0, item: { id: 'msg_a', type: 'message', role: 'assistant', content: [] } }),
        r('response.content_part.added', { item_id: 'msg_a', output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } }),
        r('response.output_text.delta', { item_id: 'msg_a', output_index: 0, content_index: 0, delta: 'Hello there, ' }),
      ],
      'reset',
    );
    seq = 0;
    const item = { id: 'msg_b', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'this is the rest.' }] };
    const second = upstream(
      [
        r('response.created', { response: { ...response, id: 'resp_2' } }),
        r('response.output_item.added', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }),
        r('response.output_item.done', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }),
        r('response.output_item.added', { output_index: 1, item: { id: 'msg_b', type: 'message', role: 'assistant', content: [] } }),
        r('response.content_part.added', { item_id: 'msg_b', output_index: 1, content_index: 0, part: { type: 'output_text', text: '' } }),
        r('response.output_text.delta', { item_id: 'msg_b', output_index: 1, content_index: 0, delta: 'this is the rest.' }),
        r('response.output_text.done', { item_id: 'msg_b', output_index: 1, content_index: 0, text: 'this is the rest.' }),
        r('response.content_part.done', { item_id: 'msg_b', output_index: 1, content_index: 0, part: item.content[0] }),
        r('response.output_item.done', { output_index: 1, item }),
        r('response.completed', { response: { ...response, id: 'resp_2', status: 'completed', output: [item], usage: { input_tokens: 9, output_tokens: 6, total_tokens: 15 } } }),
      ],
      'end',
    );
    const out = recoverStream(ctx, first.response, { max: 1, idleMs: 0, next: async () => ({ response: second.response, mode: 'prefill' }) });
    const { text, error } = await read(out.body as BodySource);
    expect(error).toBeNull();
    const events = eventsOf(text);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(text).not.toContain('reasoning');
    expect(new Set(events.filter((e) => e.data.item_id !== undefined).map((e) => e.data.item_id))).toEqual(new Set(['msg_a']));
    const whole = 'Hello there, this is the rest.';
    expect(events.find((e) => e.name === 'response.output_text.done')!.data.text).toBe(whole);
    const completed = events.at(-1)!;
    expect(completed.name).toBe('response.completed');
    expect(completed.data.response.id).toBe('resp_1');
    expect(completed.data.response.output).toEqual([expect.objectContaining({ id: 'msg_a', content: [expect.objectContaining({ text: whole })] })]);
  });
});

describe('recoverStream: what is not a break, and the body the log sees', () => {
  test('a client that reads slowly is not a silent upstream: no break, no continuation', async () => {
    const ctx = ctxOf();
    const first = upstream([chunk('a', { content: 'One ' }), chunk('a', { content: 'two ' }), chunk('a', {}, 'stop'), 'data: [DONE]\n\n'], 'end');
    let asked = 0;
    const out = recoverStream(ctx, first.response, {
      max: 1,
      idleMs: 30,
      next: async () => {
        asked++;
        return null;
      },
    });
    let paused = false;
    const { text, error } = await new Promise<{ text: string; error: Error | null }>((resolve) => {
      let text = '';
      const flow = (out.body as BodySource).start({
        data(c) {
          text += c.toString();
          if (paused) return true;
          paused = true;
          // The client takes three idle periods to read on.
          setTimeout(() => flow.resume(), 100);
          return false;
        },
        end: (error) => resolve({ text, error }),
      });
    });
    expect(error).toBeNull();
    expect(asked).toBe(0);
    expect(contentOf(text)).toBe('One two ');
    expect(ctx.get(STREAM_RECOVERY)!.breaks).toEqual([]);
  });

  test('an answer that finished before an error event: the closing event only, not the error', async () => {
    const ctx = doorCtx('messages', { model: 'm', max_tokens: 50, messages: [] });
    const first = upstream(
      [
        ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Done.' } }),
        ev('content_block_stop', { index: 0 }),
        ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }),
        ev('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }),
      ],
      'end',
    );
    const out = recoverStream(ctx, first.response, { max: 1, idleMs: 0, next: async () => null });
    const { text } = await read(out.body as BodySource);
    const names = eventsOf(text).map((e) => e.name);
    expect(names.at(-1)).toBe('message_stop');
    expect(names).not.toContain('error');
  });

  test('the stream ends while a continuation call is pending: the call is called off and the request body is the client\'s again', async () => {
    const ctx = ctxOf();
    const original = ctx.body;
    let signalled: AbortSignal | null = null;
    const out = recoverStream(ctx, upstream([chunk('a', { content: 'One ' })], 'reset').response, {
      max: 1,
      idleMs: 0,
      next: (partial, signal) =>
        runContinuation(ctx, 'chat.completions', { provider: 'openai' }, partial, () => {
          signalled = ctx.attemptSignal;
          return new Promise(() => undefined);
        }, signal),
    });
    const { error } = await read(out.body as BodySource, (_text, flow) => {
      setTimeout(() => flow.abort(new Error('the client left')), 20);
    });
    expect(error?.message).toBe('the client left');
    expect(ctx.body).toBe(original);
    expect(signalled!.aborted).toBe(true);
  });
});

test('chat: a continuation\'s reasoning is left out; its answer goes on', async () => {
  const ctx = ctxOf();
  const second = upstream([chunk('b', { role: 'assistant', content: '' }), chunk('b', { reasoning_content: 'Where was I?' }), chunk('b', { content: 'two.' }), chunk('b', {}, 'stop'), 'data: [DONE]\n\n'], 'end');
  const out = recoverStream(ctx, upstream([chunk('a', { role: 'assistant', content: '' }), chunk('a', { content: 'One ' })], 'reset').response, { max: 1, idleMs: 0, next: async () => ({ response: second.response, mode: 'prefill' }) });
  const { text, error } = await read(out.body as BodySource);
  expect(error).toBeNull();
  expect(contentOf(text)).toBe('One two.');
  expect(text).not.toContain('Where was I');
  expect(text.match(/"role"/g)).toHaveLength(1);
});
