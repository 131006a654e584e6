import { describe, expect, test } from 'vitest';
import { UpstreamBody, type UpstreamResponse } from '../../../core/index.js';
import { geminiErrorAnswer } from '../../../sdk/gemini/answer.js';
import { geminiStreamTranslator, type GeminiStreamOptions } from '../../../sdk/gemini/stream.js';
import type { OpenAIUsage } from '../../../sdk/openai/chunks.js';

const ev = (value: unknown, sep = '\r\n\r\n') => `data: ${JSON.stringify(value)}${sep}`;
const base = { modelVersion: 'gemini-2.5-flash-001', responseId: 'r1' };

/** A stream with thought, multi-byte text, a function call, a finish and usage on every event. */
const STREAM = [
  ev({ candidates: [{ content: { role: 'model', parts: [{ text: 'Pondering… 🤔', thought: true }] }, index: 0 }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 0 }, ...base }),
  ev({ candidates: [{ content: { role: 'model', parts: [{ text: 'Héllo ' }] }, index: 0 }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 1 }, ...base }),
  ev({ candidates: [{ content: { role: 'model', parts: [{ text: 'wörld 🌍' }] }, index: 0 }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 3 }, ...base }),
  ev({
    candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Zürich' } }, thoughtSignature: 'sig' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 9, cachedContentTokenCount: 3, candidatesTokenCount: 5, thoughtsTokenCount: 4 },
    ...base,
  }),
].join('');

function run(stream: string, size: number, options: Partial<GeminiStreamOptions> = {}): { out: string; usage: OpenAIUsage[] } {
  const usage: OpenAIUsage[] = [];
  const t = geminiStreamTranslator({ model: 'gemini-2.5-flash', includeUsage: true, strict: false, id: 'chatcmpl-fixed', created: 1700000000, onUsage: (u) => usage.push(u), ...options });
  const bytes = Buffer.from(stream, 'utf8');
  let out = '';
  for (let i = 0; i < bytes.length; i += size) out += t.push(bytes.subarray(i, i + size));
  return { out: out + t.end(), usage };
}

const chunks = (out: string) =>
  out
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => e.slice(6))
    .map((d) => (d === '[DONE]' ? d : JSON.parse(d)));

describe('geminiStreamTranslator', () => {
  test.each([1, 7, 64])('the same stream cut every %i bytes gives the same output as in one piece', (size) => {
    expect(run(STREAM, size).out).toBe(run(STREAM, STREAM.length).out);
  });

  test('role first, reasoning, text deltas, one tool call chunk pair, finish tool_calls, usage, [DONE]', () => {
    const { out, usage } = run(STREAM, STREAM.length);
    const c = chunks(out);
    expect(c.at(-1)).toBe('[DONE]');
    const deltas = c.slice(0, -2).map((x: any) => [x.choices[0].delta, x.choices[0].finish_reason]);
    expect(deltas).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ reasoning_content: 'Pondering… 🤔' }, null],
      [{ content: 'Héllo ' }, null],
      [{ content: 'wörld 🌍' }, null],
      [{ tool_calls: [{ index: 0, id: 'call_fixed_0', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: '{"city":"Zürich"}' } }] }, null],
      [{}, 'tool_calls'],
    ]);
    for (const x of c.slice(0, -1)) {
      expect(x.id).toBe('chatcmpl-fixed');
      expect(x.model).toBe('gemini-2.5-flash-001');
      expect(x.created).toBe(1700000000);
    }
    const expected = { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 4 } };
    expect(c.at(-2)).toMatchObject({ choices: [], usage: expected });
    expect(usage).toEqual([expected]);
  });

  test('strict drops thought parts; without include_usage there is no usage chunk but the log still gets usage', () => {
    const { out, usage } = run(STREAM, 5, { strict: true, includeUsage: false });
    expect(out).not.toContain('reasoning_content');
    expect(out).not.toContain('Pondering');
    expect(out).not.toContain('"choices":[]');
    expect(out).not.toContain('"usage"');
    expect(usage).toHaveLength(1);
  });

  test('LF separators work too; a stream without finishReason still ends with one finish chunk', () => {
    const s = ev({ candidates: [{ content: { parts: [{ text: 'a' }] } }] }, '\n\n') + ev({ candidates: [{ content: { parts: [{ text: 'b' }] } }] }, '\n\n');
    const c = chunks(run(s, 3, { includeUsage: false }).out);
    expect(c.map((x: any) => (x === '[DONE]' ? x : x.choices[0].finish_reason))).toEqual([null, null, null, 'stop', '[DONE]']);
  });

  test('MAX_TOKENS and SAFETY finishes', () => {
    for (const [reason, expected] of [['MAX_TOKENS', 'length'], ['SAFETY', 'content_filter']] as const) {
      const out = run(ev({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: reason }] }), 4, { includeUsage: false }).out;
      expect(chunks(out).filter((x: any) => x !== '[DONE]' && x.choices[0].finish_reason !== null).map((x: any) => x.choices[0].finish_reason)).toEqual([expected]);
    }
  });

  test('an error event mid-stream → an error event in the gateway envelope and [DONE]; the rest is ignored', () => {
    const s =
      ev({ candidates: [{ content: { parts: [{ text: 'Hel' }] } }] }) +
      ev({ error: { code: 500, message: 'Mock stream failure', status: 'INTERNAL' } }) +
      ev({ candidates: [{ content: { parts: [{ text: 'IGNORED' }] } }] });
    for (const size of [1, 7, 64]) {
      const { out } = run(s, size);
      const c = chunks(out);
      expect(c.at(-1)).toBe('[DONE]');
      expect(c.at(-2)).toEqual({ error: { message: 'Mock stream failure', type: 'INTERNAL', param: null, code: '500' } });
      expect(out).toContain('"content":"Hel"');
      expect(out).not.toContain('IGNORED');
      expect(out.match(/\[DONE\]/g)).toHaveLength(1);
    }
  });

  test('an event that is not JSON ends the stream with an error event', () => {
    const c = chunks(run('data: {nope\r\n\r\n', 2).out);
    expect(c.at(-2).error.type).toBe('upstream_error');
    expect(c.at(-1)).toBe('[DONE]');
  });

  test('a blocked prompt in a stream (promptFeedback only) → content_filter', () => {
    const c = chunks(run(ev({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 3 } }), 64, { includeUsage: false }).out);
    expect(c.filter((x: any) => x !== '[DONE]').map((x: any) => x.choices[0].finish_reason)).toEqual([null, 'content_filter']);
  });
});

describe('geminiErrorAnswer', () => {
  const upstream = (status: number, headers: Record<string, string> = {}): UpstreamResponse => ({ status, headers, body: UpstreamBody.of(status, null) });

  test('status kept, type = Google status, message kept, code as string; RetryInfo → retry-after and retry-after-ms', () => {
    const r = geminiErrorAnswer(
      upstream(429, { 'x-request-id': 'q' }),
      { error: { code: 429, message: 'Resource exhausted.', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '35.2s' }] } },
      'google',
    );
    expect(r.status).toBe(429);
    expect(JSON.parse(r.body as string)).toEqual({ error: { message: 'Resource exhausted.', type: 'RESOURCE_EXHAUSTED', param: null, code: '429' } });
    expect(r.headers['retry-after']).toBe('36');
    expect(r.headers['retry-after-ms']).toBe('36000');
    expect(r.headers['x-request-id']).toBe('q');
  });

  test("the upstream's own retry-after wins; an array-wrapped envelope is read", () => {
    const r = geminiErrorAnswer(upstream(429, { 'retry-after': '7' }), [{ error: { code: 429, message: 'm', status: 'RESOURCE_EXHAUSTED', details: [{ retryDelay: '36s' }] } }], 'google');
    expect(r.headers['retry-after']).toBe('7');
    expect(JSON.parse(r.body as string).error.type).toBe('RESOURCE_EXHAUSTED');
  });

  test('a body that is not the envelope gets a message naming the provider and status', () => {
    const r = geminiErrorAnswer(upstream(502), null, 'vertex-ai');
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body as string).error).toEqual({ message: 'The provider vertex-ai answered 502.', type: 'upstream_error', param: null, code: null });
  });
});
