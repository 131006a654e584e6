import { describe, expect, test } from 'vitest';
import { RequestContext, createLogger } from '../../../core/index.js';
import { extractUsage, jsonUsageObserver, sseUsageObserver, toUsage } from '../../../sdk/openai/usage.js';

const ctx = () => new RequestContext('POST', '/v1/chat/completions', {}, new AbortController().signal, createLogger({ level: 'silent' }));

describe('extractUsage', () => {
  test('reads the last usage object, with details', () => {
    const text = JSON.stringify({ id: 'x', choices: [{ message: { content: 'has "usage": {"prompt_tokens": 999} inside' } }], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 4 } } });
    expect(extractUsage(text)).toEqual({ prompt_tokens: 5, completion_tokens: 7, total_tokens: 12, cached_tokens: 2, reasoning_tokens: 4 });
  });

  test('null usage, no usage, and broken JSON give null', () => {
    expect(extractUsage('{"usage":null}')).toBeNull();
    expect(extractUsage('{"id":"x"}')).toBeNull();
    expect(extractUsage('{"usage":{"prompt_tokens":')).toBeNull();
    expect(extractUsage('{"usage":{"prompt_tokens":"x"}}')).toBeNull();
  });

  test('strings containing braces do not confuse the scanner', () => {
    expect(extractUsage('{"usage":{"note":"}{","prompt_tokens":1,"completion_tokens":1}}')).toEqual({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
  });

  test('embeddings usage has no completion tokens', () => {
    expect(toUsage({ prompt_tokens: 8, total_tokens: 8 })).toEqual({ prompt_tokens: 8, completion_tokens: 0, total_tokens: 8 });
  });
});

describe('observers', () => {
  const stream = [
    'data: {"id":"c","choices":[{"delta":{"content":"Hi"}}],"usage":null}\n\n',
    'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}\n\n',
    'data: [DONE]\n\n',
  ].join('');

  test.each([1, 2, 7, 64, stream.length])('SSE usage is found whatever the chunk size (%i bytes)', (size) => {
    const c = ctx();
    const o = sseUsageObserver(c);
    for (let i = 0; i < stream.length; i += size) o.onChunk(Buffer.from(stream.slice(i, i + size)));
    o.onEnd!(null);
    expect(c.usage).toEqual({ prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 });
  });

  test('a stream with no usage chunk leaves usage null', () => {
    const c = ctx();
    const o = sseUsageObserver(c);
    o.onChunk(Buffer.from('data: {"choices":[],"usage":null}\n\ndata: [DONE]\n\n'));
    o.onEnd!(null);
    expect(c.usage).toBeNull();
  });

  test('JSON usage is read at the end, across chunks; a broken body leaves it null', () => {
    const body = Buffer.from('{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}');
    const c = ctx();
    const o = jsonUsageObserver(c);
    o.onChunk(body.subarray(0, 20));
    o.onChunk(body.subarray(20));
    o.onEnd!(null);
    expect(c.usage?.total_tokens).toBe(3);

    const broken = ctx();
    const b = jsonUsageObserver(broken);
    b.onChunk(body);
    b.onEnd!(new Error('reset'));
    expect(broken.usage).toBeNull();
  });
});

describe('the usage a translated answer hands the log', () => {
  test('every billed kind comes through (1-hour writes under their symbol); null details are no details', async () => {
    const { openAIUsage } = await import('../../../sdk/openai/chunks.js');
    const { toGatewayUsage } = await import('../../../sdk/openai/translate.js');
    const u = openAIUsage(10_000, 500, 2_000, 100, { cacheWrite: 3_000, cacheWrite1h: 1_000, audioIn: 400, audioOut: 50 });
    expect(JSON.parse(JSON.stringify(u))).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      prompt_tokens_details: { cached_tokens: 2_000, cache_write_tokens: 3_000, audio_tokens: 400 },
      completion_tokens_details: { reasoning_tokens: 100, audio_tokens: 50 },
    });
    expect(toGatewayUsage(u)).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 500,
      total_tokens: 10_500,
      cached_tokens: 2_000,
      cache_write_tokens: 3_000,
      cache_write_1h_tokens: 1_000,
      input_audio_tokens: 400,
      reasoning_tokens: 100,
      output_audio_tokens: 50,
    });
    expect(toGatewayUsage({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, prompt_tokens_details: null, completion_tokens_details: null } as never)).toEqual({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 });
    expect(toUsage({ prompt_tokens: 5, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 1, cache_write_tokens: 2, audio_tokens: 0 } })).toEqual({ prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, cached_tokens: 1, cache_write_tokens: 2 });
  });
});
