import { describe, expect, test } from 'vitest';
import { createLogger, RequestContext } from '../../../../core/index.js';
import { azureStreamTranslator } from '../../../../plugins/providers/azure/normalize.js';
import { acceptsStreamOptions } from '../../../../plugins/providers/azure/openai/url.js';
import { openaiCompatible } from '../../../../plugins/providers/openai-compatible/index.js';
import { compatibleStream } from '../../../../plugins/providers/openai-compatible/normalize.js';
import { COMPATIBLE_PROVIDERS } from '../../../../plugins/providers/openai-compatible/table.js';

const ctx = () => new RequestContext('POST', '/v1/chat/completions', {}, new AbortController().signal, createLogger({ level: 'silent' }));
const USAGE = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 2 } };
const chunk = (extra: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...extra })}\n\n`;
const content = (text: string, finish: string | null = null) => ({ choices: [{ index: 0, delta: { content: text }, finish_reason: finish }] });
const payloads = (text: string) => text.split('\n\n').filter((e) => e !== '' && e !== 'data: [DONE]').map((e) => JSON.parse(e.slice(6)) as Record<string, any>);

describe('translated streams the gateway asked usage for', () => {
  test('compatible rows with quirks: usage recorded; the usage-only chunk dropped, usage on a content chunk nulled', () => {
    const row = { name: 'deepseek', baseURL: 'x', auth: 'bearer' as const, routes: ['chat.completions' as const], quirks: { usage: 'deepseek' as const } };
    const input = chunk(content('Hi')) + chunk({ ...content('!', 'stop'), usage: USAGE }) + chunk({ choices: [], usage: USAGE }) + 'data: [DONE]\n\n';
    const c = ctx();
    const t = compatibleStream(row, c, false, true);
    const out = payloads(t.push(Buffer.from(input)) + t.end());
    expect(out).toHaveLength(2);
    expect(out[1]!.usage).toBeNull();
    expect(out.every((p) => p.choices.length > 0)).toBe(true);
    expect(c.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, cached_tokens: 4, reasoning_tokens: 2 });
    // Not asked by the gateway: usage on a content chunk passes as before.
    const before = compatibleStream(row, ctx(), false);
    expect(payloads(before.push(Buffer.from(input)) + before.end())[1]!.usage).toMatchObject({ prompt_tokens: 7 });
  });

  test('azure: the usage-only chunk dropped and usage nulled when the gateway asked; kept otherwise', () => {
    const input = chunk({ id: '', model: '', created: 0, choices: [], prompt_filter_results: [] }) + chunk({ ...content('Hi', 'stop'), usage: null }) + chunk({ choices: [], usage: USAGE }) + 'data: [DONE]\n\n';
    const c = ctx();
    const asked = azureStreamTranslator(c, 'azure-openai', true);
    const out = payloads(asked.push(Buffer.from(input)) + asked.end());
    expect(out).toHaveLength(1);
    expect(out[0]!.usage).toBeNull();
    expect(c.usage).toMatchObject({ total_tokens: 10, cached_tokens: 4, reasoning_tokens: 2 });
    const plain = azureStreamTranslator(ctx(), 'azure-openai');
    expect(payloads(plain.push(Buffer.from(input)) + plain.end()).at(-1)!.usage).toMatchObject({ total_tokens: 10 });
  });

  test('azure API versions that take stream_options', () => {
    for (const v of ['v1', '2024-08-01-preview', '2024-09-01-preview', '2024-10-21', '2025-04-01-preview']) expect(acceptsStreamOptions(v), v).toBe(true);
    for (const v of ['2024-06-01', '2024-02-01', '2023-05-15', '2024-05-01-preview', 'preview', '']) expect(acceptsStreamOptions(v), v).toBe(false);
  });
});

describe('the streamUsage option', () => {
  test('no bundled row is asked by default; the option names known providers only', () => {
    expect(COMPATIBLE_PROVIDERS.filter((r) => r.streamUsage !== undefined)).toEqual([]);
    expect(() => openaiCompatible({ streamUsage: { vllm: 'ask', deepseek: 'off' } })).not.toThrow();
    expect(() => openaiCompatible({ streamUsage: { nope: 'ask' } })).toThrow(/streamUsage: unknown provider "nope"/);
    expect(() => openaiCompatible({ extra: [{ name: 'mine', baseURL: 'http://x', auth: 'bearer', routes: ['chat.completions'] }], streamUsage: { mine: 'ask' } })).not.toThrow();
    expect(() => openaiCompatible({ streamUsage: { vllm: 'maybe' as 'ask' } })).toThrow();
  });
});
