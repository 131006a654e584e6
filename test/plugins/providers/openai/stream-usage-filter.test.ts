import { describe, expect, test } from 'vitest';
import { mapChunks, readResponseBody, RequestContext, UpstreamBody, type Target, type Usage } from '../../../../core/index.js';
import { asksStreamUsage, streamUsageBody, streamUsageResponse, usageEventFilter, withStreamUsage } from '../../../../sdk/openai/stream-usage.js';
import { memoryLogger } from '../../../helpers/gateway.js';
import { REASONING_RECORDED, REASONING_USAGE as USAGE } from './reasoning-usage.js';

/** Runs `chunks` through a fresh filter: the bytes out, and the usages it reported. */
async function run(chunks: Buffer[]): Promise<{ out: string; usages: Usage[] }> {
  const usages: Usage[] = [];
  const filter = usageEventFilter((u) => usages.push(u));
  const out = await readResponseBody(mapChunks(UpstreamBody.from(chunks), filter));
  return { out: out.toString('utf8'), usages };
}

const splitAt = (text: string, ...at: number[]): Buffer[] => {
  const bytes = Buffer.from(text);
  const cuts = [0, ...at, bytes.length];
  return cuts.slice(1).map((end, i) => bytes.subarray(cuts[i], end));
};

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'o3-mini', system_fingerprint: 'fp_1' };
const RECORDED: Usage = REASONING_RECORDED;
const ev = (value: unknown, eol = '\n') => `data: ${JSON.stringify(value)}${eol}${eol}`;

/** A stream as OpenAI sends it with include_usage: `usage: null` and an `obfuscation` pad on each chunk, then the usage event. */
function openAIStream(eol = '\n', content = 'Hé "usage": {} ✓'): { upstream: string; expected: string } {
  const events = [
    ev({ ...base, service_tier: 'default', choices: [{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }], usage: null, obfuscation: 'aB3' }, eol),
    ev({ ...base, service_tier: 'default', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null, obfuscation: 'x"usage":{' }, eol),
    ev({ ...base, service_tier: 'default', choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], usage: null, obfuscation: 'Zz' }, eol),
  ];
  const usage = ev({ ...base, service_tier: 'default', choices: [], usage: USAGE, obfuscation: 'q9' }, eol);
  const done = `data: [DONE]${eol}${eol}`;
  return { upstream: events.join('') + usage + done, expected: events.join('') + done };
}

describe('usageEventFilter', () => {
  test('the usage event is left out and reported; every other byte passes, at every split into two chunks', async () => {
    const { upstream, expected } = openAIStream();
    const bytes = Buffer.byteLength(upstream);
    for (let i = 0; i <= bytes; i++) {
      const { out, usages } = await run(splitAt(upstream, i));
      expect(out, `split at ${i}`).toBe(expected);
      expect(usages, `split at ${i}`).toEqual([RECORDED]);
    }
  });

  test('one byte per chunk, and every split into three chunks around the usage event', async () => {
    const { upstream, expected } = openAIStream();
    const bytes = Buffer.from(upstream);
    expect((await run([...bytes].map((b) => Buffer.from([b])))).out).toBe(expected);
    const start = upstream.indexOf('"choices":[]');
    for (let i = start - 24; i < start + 24; i++) {
      for (let j = i; j < bytes.length; j += 11) {
        const { out, usages } = await run(splitAt(upstream, i, j));
        expect(out, `split at ${i}, ${j}`).toBe(expected);
        expect(usages).toHaveLength(1);
      }
    }
  });

  test('CRLF framing, at every split', async () => {
    const { upstream, expected } = openAIStream('\r\n');
    for (let i = 0; i <= Buffer.byteLength(upstream); i++) {
      const { out, usages } = await run(splitAt(upstream, i));
      expect(out, `split at ${i}`).toBe(expected);
      expect(usages).toEqual([RECORDED]);
    }
  });

  test('a stream without a usage object passes byte for byte, whole chunks as they came', async () => {
    const text = ev({ ...base, choices: [{ index: 0, delta: { content: 'a "usage" word' }, finish_reason: null }], usage: null }) + ev({ ...base, choices: [], usage: null }) + 'data: [DONE]\n\n';
    for (let i = 0; i <= Buffer.byteLength(text); i += 3) {
      const { out, usages } = await run(splitAt(text, i));
      expect(out).toBe(text);
      expect(usages).toEqual([]);
    }
  });

  test('usage on a content event: recorded, the content goes on with "usage":null in place of the object', async () => {
    const last = `data: {"id":"x","choices":[{"index":0,"delta":{"content":"bye"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}},"x_extra":{"usage":{"n":1}}}\n\n`;
    const text = ev({ ...base, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] }) + last + 'data: [DONE]\n\n';
    const expected = text.replace('"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}', '"usage":null');
    expect(expected).not.toBe(text);
    for (let i = 0; i <= Buffer.byteLength(text); i++) {
      const { out, usages } = await run(splitAt(text, i));
      expect(out, `split at ${i}`).toBe(expected);
      expect(usages).toEqual([{ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cached_tokens: 2 }]);
    }
  });

  test('a usage object nested elsewhere (Groq x_groq.usage) is no top-level usage: the event passes unchanged', async () => {
    const text = ev({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], x_groq: { id: 'req_1', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } }) + 'data: [DONE]\n\n';
    expect(await run([Buffer.from(text)])).toEqual({ out: text, usages: [] });
  });

  test('spaces around the colon (a Python server), comments and a last event without its blank line', async () => {
    const text = ': keep-alive\n\ndata: {"choices": [{"index": 0, "delta": {"content": "x"}}], "usage": null}\n\ndata: {"choices": [], "usage" : {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}}';
    const { out, usages } = await run([Buffer.from(text)]);
    expect(out).toBe(': keep-alive\n\ndata: {"choices": [{"index": 0, "delta": {"content": "x"}}], "usage": null}\n\n');
    expect(usages).toEqual([{ prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 }]);
  });

  test('an event over 1 MiB without its end is passed on unread, and the filter goes on after it', async () => {
    const big = `data: {"choices":[{"index":0,"delta":{"content":"${'a'.repeat(1024 * 1024 + 10)}"}}]}\n\n`;
    const usage = ev({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    const chunks = [...splitAt(big, 1000, 600_000, 1_100_000), Buffer.from(usage + 'data: [DONE]\n\n')];
    const { out, usages } = await run(chunks);
    expect(out).toBe(big + 'data: [DONE]\n\n');
    expect(usages).toHaveLength(1);
  });

  test('a chunk that ends an event and holds no usage object goes out as the same buffer', async () => {
    const filter = usageEventFilter(() => undefined);
    const chunk = Buffer.from(ev({ ...base, choices: [{ index: 0, delta: { content: 'x' } }], usage: null }));
    expect(filter.push(chunk)).toBe(chunk);
  });
});

function ctxWith(body: Record<string, unknown>, raw = JSON.stringify(body)): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', {}, null, memoryLogger().logger);
  ctx.rawBody = Buffer.from(raw);
  ctx.body = body;
  return ctx;
}
const target: Target = { provider: 'openai' };

describe('asking for usage', () => {
  test('only streams whose client did not ask; not a front door translation, nor a malformed stream_options', () => {
    const msgs = [{ role: 'user', content: 'hi' }];
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true }), target)).toBe(true);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true, stream_options: null }), target)).toBe(true);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true, stream_options: { include_usage: false } }), target)).toBe(true);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true, stream_options: { include_usage: true } }), target)).toBe(false);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true, stream_options: 'yes' }), target)).toBe(false);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs }), target)).toBe(false);
    // override_params decide as they would in the body sent.
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs }), { ...target, override_params: { stream: true } })).toBe(true);
    expect(asksStreamUsage(ctxWith({ model: 'm', messages: msgs, stream: true }), { ...target, override_params: { stream_options: { include_usage: true } } })).toBe(false);
    const door = ctxWith({ model: 'm', input: 'hi', stream: true });
    door.upstreamBody = { model: 'm', messages: msgs, stream: true };
    expect(asksStreamUsage(door, target)).toBe(false);
  });

  test("the client's bytes with the option spliced in before the closing brace, built once for the request", () => {
    const raw = '{"model":"m","seed":12345678901234567890,"messages":[{"role":"user","content":"h\\u00e9"}],"stream":true}  \n';
    const ctx = ctxWith(JSON.parse(raw) as Record<string, unknown>, raw);
    const sent = streamUsageBody(ctx, target)!;
    expect(Buffer.isBuffer(sent)).toBe(true);
    expect(sent.toString()).toBe('{"model":"m","seed":12345678901234567890,"messages":[{"role":"user","content":"h\\u00e9"}],"stream":true,"stream_options":{"include_usage":true}}  \n');
    expect(streamUsageBody(ctx, target)).toBe(sent);
    expect(streamUsageBody(ctxWith({ model: 'm', stream: false }), target)).toBeNull();
  });

  test("the client's other stream_options are kept; override_params, a changed body and a model to set re-serialise", () => {
    const kept = streamUsageBody(ctxWith({ model: 'm', stream: true, stream_options: { include_obfuscation: false } }), target) as string;
    expect(JSON.parse(kept)).toEqual({ model: 'm', stream: true, stream_options: { include_obfuscation: false, include_usage: true } });
    const overridden = streamUsageBody(ctxWith({ model: 'm', stream: true }), { ...target, override_params: { temperature: 0 } }) as string;
    expect(JSON.parse(overridden)).toEqual({ model: 'm', stream: true, temperature: 0, stream_options: { include_usage: true } });
    const changed = ctxWith({ model: 'm', stream: true });
    changed.bodyChanged = true;
    (changed.body as Record<string, unknown>).user = 'u';
    expect(JSON.parse(streamUsageBody(changed, target) as string)).toEqual({ model: 'm', stream: true, user: 'u', stream_options: { include_usage: true } });
    expect(JSON.parse(streamUsageBody(ctxWith({ model: 'm', stream: true }), target, 'deployment-1') as string)).toEqual({ model: 'deployment-1', stream: true, stream_options: { include_usage: true } });
    expect(withStreamUsage(undefined)).toEqual({ include_usage: true });
  });
});

describe('streamUsageResponse', () => {
  const sse = (headers: Record<string, string> = {}) => {
    const { upstream } = openAIStream();
    return { status: 200, headers: { 'content-type': 'text/event-stream', 'x-request-id': 'r1', ...headers }, body: UpstreamBody.from([Buffer.from(upstream)]) };
  };

  test('asked: the usage goes to ctx.usage, not to the client; an announced length is dropped; other headers kept', async () => {
    const ctx = ctxWith({ model: 'm', stream: true });
    const up = sse({ 'content-length': '9999' });
    const response = streamUsageResponse(up, ctx, true);
    expect(response.headers['content-length']).toBeUndefined();
    expect(response.headers['x-request-id']).toBe('r1');
    expect(response.observers).toBeNull();
    expect((await readResponseBody(response.body)).toString()).toBe(openAIStream().expected);
    expect(ctx.usage).toEqual(RECORDED);
  });

  test('not asked, not a stream, not a success, or compressed: the usual pass-through with its usage observer', () => {
    const ctx = ctxWith({ model: 'm', stream: true });
    for (const [up, asked] of [
      [sse(), false],
      [{ ...sse(), headers: { 'content-type': 'application/json' } }, true],
      [{ ...sse(), status: 500 }, true],
      [sse({ 'content-encoding': 'gzip' }), true],
    ] as const) {
      const response = streamUsageResponse(up, ctx, asked);
      expect(response.body).toBe(up.body);
    }
  });
});
