import { describe, expect, test } from 'vitest';
import { createLogger } from '../../../core/index.js';
import { BatchQueue } from '../../../plugins/logs/queue.js';
import { assembleSSE } from '../../../sdk/observe/assemble.js';
import { modelOfJson } from '../../../sdk/observe/capture.js';
import { redactBody, scrubText } from '../../../plugins/logs/redact.js';
import { estimatePromptTokens } from '../../../sdk/observe/summary.js';
import { toUsage } from '../../../sdk/openai/usage.js';
import { pricing } from '../../../plugins/pricing/index.js';
import { pricingOf } from '../../../sdk/index.js';
import { bundledPricing, bundledPricingData, PricingTable } from '../../../sdk/pricing/table.js';
import { parseTraceparent, w3cTraceId } from '../../../plugins/traceparent/index.js';
import { memoryLogger } from '../../helpers/gateway.js';

describe('pricing', () => {
  const table = bundledPricing();

  test('the bundled file prices the main models of every bundled provider', () => {
    const expected: Record<string, string[]> = {
      openai: ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3-mini', 'gpt-5'],
      anthropic: ['claude-sonnet-4-5', 'claude-3-5-haiku-20241022'],
      google: ['gemini-2.5-pro', 'gemini-2.5-flash'],
      'vertex-ai': ['gemini-2.0-flash', 'claude-sonnet-4-5@20250929'],
      bedrock: ['us.anthropic.claude-sonnet-4-20250514-v1:0'],
      'azure-openai': ['gpt-4o'],
      groq: ['llama-3.3-70b-versatile'],
      'together-ai': ['meta-llama/Llama-3.3-70B-Instruct-Turbo'],
      'mistral-ai': ['mistral-large-latest'],
      deepseek: ['deepseek-chat', 'deepseek-reasoner'],
      'x-ai': ['grok-4', 'grok-3-mini'],
      'perplexity-ai': ['sonar', 'sonar-pro'],
    };
    for (const [provider, models] of Object.entries(expected)) {
      for (const model of models) expect(table.lookup(provider, model), `${provider}/${model}`).not.toBeNull();
    }
    expect(table.version).toMatch(/^genai-prices 0\.1\.8 \+ gateway overrides \d{4}-\d{2}-\d{2}$/);
    expect(table.size).toBeGreaterThan(500);
    expect(Object.keys(bundledPricingData().providers)).toEqual(expect.arrayContaining(['openai', 'anthropic', 'google', 'bedrock', 'azure']));
  });

  test('lookup: a rule of the list names the model; a trailing date is dropped; a path and a Bedrock prefix are; no other name stands in', () => {
    expect(table.lookup('openai', 'gpt-4o-mini-2024-07-18')).toEqual(table.lookup('openai', 'gpt-4o-mini'));
    expect(table.lookup('openai', 'gpt-4o-2024-08-06')).toEqual(table.lookup('openai', 'gpt-4o'));
    expect(table.lookup('openai', 'gpt-4o-2024-08-06')).not.toEqual(table.lookup('openai', 'gpt-4o-mini'));
    expect(table.lookup('openai', 'gpt-4omni')).toBeNull();
    expect(table.lookup('google', 'models/gemini-2.5-flash')).toEqual(table.lookup('google', 'gemini-2.5-flash'));
    expect(table.lookup('google', 'gemini-2.5-flash-lite')).not.toEqual(table.lookup('google', 'gemini-2.5-flash'));
    expect(table.lookup('openai', 'my-model')).toBeNull();
    expect(table.lookup('ollama', 'llama3')).toBeNull();
    expect(table.lookup(null, 'gpt-4o')).toBeNull();
  });

  test('the pricing plugin lays prices over the bundled list (a name it names wins); a bad price fails at boot, naming it', () => {
    const plugin = pricing({ prices: { ollama: { '*': { input: 0, output: 0 } }, openai: { 'My-Model': { input: 1, output: 2 }, 'gpt-4o': { input: 2, output: 8 } } } });
    let provided: PricingTable | null = null;
    plugin.apply({ provide: (_t: symbol, v: PricingTable) => (provided = v) } as never);
    expect(provided!.lookup('ollama', 'llama3')).toEqual({ input: 0, output: 0 });
    expect(provided!.lookup('openai', 'my-model')).toEqual({ input: 1, output: 2 });
    expect(provided!.lookup('openai', 'gpt-4o')).toEqual({ input: 2, output: 8 });
    expect(provided!.lookup('openai', 'gpt-4o-mini')).toEqual(table.lookup('openai', 'gpt-4o-mini'));
    expect(provided!.version).toBe(`${table.version} + the pricing plugin's prices`);
    expect(() => pricing({ prices: { x: { m: { input: -1, output: 0 } } } })).toThrow(/prices\.x\.m\.input/);
    expect(() => new PricingTable({ providers: { x: { m: { input: Number.NaN, output: 0 } } } })).toThrow(/x \/ m/);
    expect(pricingOf({ tryResolve: () => undefined } as never)).toBe(table);
  });
});

describe('redaction', () => {
  test('credential fields and key-shaped values are replaced; token counts are not', () => {
    const body = JSON.stringify({
      model: 'gpt-4o',
      api_key: 'abc',
      apiKey: 'abc',
      nested: { 'x-api-key': 'abc', client_secret: 'abc', aws_secret_access_key: 'abc', password: 'abc', authorization: 'abc' },
      max_tokens: 10,
      usage: { prompt_tokens: 3 },
      messages: [{ role: 'user', content: 'use sk-proj-abcdefghijklmnopqrstu and Bearer abcdefghijk.lmn please' }],
    });
    const out = JSON.parse(redactBody(body));
    expect(out.api_key).toBe('[REDACTED]');
    expect(out.apiKey).toBe('[REDACTED]');
    expect(Object.values(out.nested)).toEqual(['[REDACTED]', '[REDACTED]', '[REDACTED]', '[REDACTED]', '[REDACTED]']);
    expect(out.max_tokens).toBe(10);
    expect(out.usage.prompt_tokens).toBe(3);
    expect(out.messages[0].content).toBe('use [REDACTED] and [REDACTED] please');
    expect(redactBody('a=1&api_key=secret&b=2')).toBe('a=1&api_key=[REDACTED]&b=2');
    expect(scrubText('key AIzaSyA1234567890abcdefghijklmnopqrstu end')).toBe('key [REDACTED] end');
    // Credential-named query parameters of a URL lose their value, whatever it looks like; other parameters stay.
    expect(scrubText('http://127.0.0.1:9/v1?key=plain-zebra-77&alt=sse')).toBe('http://127.0.0.1:9/v1?key=[REDACTED]&alt=sse');
    expect(scrubText('https://h/x?a=1&sig=abc%2Fdef&X-Amz-Credential=AK/2026&token=t0k')).toBe('https://h/x?a=1&sig=[REDACTED]&X-Amz-Credential=[REDACTED]&token=[REDACTED]');
    expect(scrubText('https://h/cb?code=oauth-code&state=s')).toBe('https://h/cb?code=[REDACTED]&state=s');
    expect(scrubText('?monkey=1&keyboard=2')).toBe('?monkey=1&keyboard=2');
    expect(redactBody('{not json, sk-abcdefghijklmnopqrstuvwxyz')).toBe('{not json, [REDACTED]');
    // JSON cut short no longer parses: its credential fields are still found.
    expect(redactBody('{"model":"m","api_key": "short","text":"a \\"quoted\\" word","password":"p')).toBe('{"model":"m","api_key": "[REDACTED]","text":"a \\"quoted\\" word","password":"p');
  });

  test('bodies are cut after redaction; a huge body costs no more than its kept part', async () => {
    const { buildEntry: build } = await import('../../../plugins/logs/entry.js');
    const { finishEntry } = await import('../../../plugins/logs/finish.js');
    // Built on the response path, finished where it is written: the test does both.
    const buildEntry: typeof build = (c, s, o) => finishEntry(build(c, s, o), o);
    const { RequestContext } = await import('../../../core/index.js');
    const huge = JSON.stringify({ model: 'gpt-4o', api_key: 'secret-value', messages: [{ role: 'user', content: 'x'.repeat(20 * 1024 * 1024) }] });
    const ctx = new RequestContext('POST', '/v1/chat/completions', { 'content-type': 'application/json' }, new AbortController().signal, createLogger({ level: 'silent' }));
    ctx.rawBody = Buffer.from(huge);
    ctx.body = { model: 'gpt-4o' };
    const summary = { startedAt: 0, endedAt: 1, provider: null, providerRequested: null, modelRequested: null, modelAnswered: null, usage: null, tokensEstimated: false, cost: null, costStatus: 'no_usage' as const, price: null, serviceTier: null, multiplier: 1, retries: 0, fallbacks: 0, circuitOpen: 0, ttftMs: null, responseText: null, responseStream: null, responseCut: false, sse: false };
    const started = performance.now();
    const truncated = buildEntry(ctx, summary, { capture: 'truncated', captureBytes: 64, scanLimit: 1024, defaultConfigId: null, housekeeping: new Set<string>(), workspaceOf: () => null });
    expect(performance.now() - started).toBeLessThan(500);
    expect(truncated.request_body).toBe('{"model":"gpt-4o","api_key":"[REDACTED]","messages":[{"role":"us');
    expect(truncated.request_body_truncated).toBe(true);
    const full = buildEntry(ctx, summary, { capture: 'full', captureBytes: 64, scanLimit: 1024, defaultConfigId: null, housekeeping: new Set<string>(), workspaceOf: () => null });
    expect(Buffer.byteLength(full.request_body!)).toBe(1024);
    expect(full.request_body_truncated).toBe(true);
    expect(buildEntry(ctx, summary, { capture: 'off', captureBytes: 64, scanLimit: 1024, defaultConfigId: null, housekeeping: new Set<string>(), workspaceOf: () => null }).request_body).toBeNull();
  });
});

describe('streams', () => {
  test('assembleSSE joins content deltas per choice, finds the model and the usage chunk, counts output characters', () => {
    const events = [
      { model: 'gpt-4o-2024', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      { choices: [{ index: 0, delta: { content: 'Hel' } }, { index: 1, delta: { content: 'Bon' } }] },
      { choices: [{ index: 0, delta: { content: 'lo' } }, { index: 1, delta: { content: 'jour' } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a":' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] } }] },
      { choices: [], usage: { prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 } },
    ];
    const text = events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join('') + 'data: [DONE]\n\n';
    // Cut at an awkward place: the parser must not care.
    const a = assembleSSE(text);
    expect(a.model).toBe('gpt-4o-2024');
    expect(a.text).toBe('Hello\nf{"a":1}\n\nBonjour');
    expect(a.outputChars).toBe('Hello'.length + 'Bonjour'.length + 'f'.length + '{"a":1}'.length);
    expect(a.usage).toEqual({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    const completions = assembleSSE('data: {"model":"m","choices":[{"index":0,"text":"Hi"}]}\n\ndata: {"choices":[{"index":0,"text":"!"}]}\n\n');
    expect(completions.text).toBe('Hi!');
  });

  test('prompt estimate: message texts (strings and text parts), prompt, input; chars / 4 rounded up', () => {
    expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'abcd' }, { role: 'user', content: [{ type: 'text', text: 'efghi' }, { type: 'image_url', image_url: { url: 'x' } }] }] })).toBe(3);
    expect(estimatePromptTokens({ prompt: ['ab', 'cd'] })).toBe(1);
    expect(estimatePromptTokens({ input: 'abcdefgh' })).toBe(2);
    expect(estimatePromptTokens(null)).toBe(0);
  });

  test('usage shapes: chat and Responses', () => {
    expect(toUsage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, prompt_tokens_details: { cached_tokens: 1 }, completion_tokens_details: { reasoning_tokens: 2 } })).toEqual({
      prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cached_tokens: 1, reasoning_tokens: 2,
    });
    expect(toUsage({ input_tokens: 3, output_tokens: 4, input_tokens_details: { cached_tokens: 1 } })).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cached_tokens: 1 });
    expect(toUsage({ search_units: 1 })).toBeNull();
    expect(modelOfJson('{"id":"x","model":"gpt-4o-mini","choices":[')).toBe('gpt-4o-mini');
  });
});

describe('traceparent', () => {
  test('parsing follows the W3C rules', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({ version: '00', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentId: '00f067aa0ba902b7', flags: '01' });
    expect(parseTraceparent('00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01')).toBeNull();
    expect(parseTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01')).toBeNull();
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01')).toBeNull();
    expect(parseTraceparent('ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBeNull();
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra')).toBeNull();
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra')).not.toBeNull();
    expect(parseTraceparent('garbage')).toBeNull();
  });

  test('the W3C trace id of a gateway trace id: itself when 32 hex (a UUID without dashes), else a SHA-256 prefix', () => {
    expect(w3cTraceId('0f8fad5b-d9cb-469f-a165-70867728950e')).toBe('0f8fad5bd9cb469fa16570867728950e');
    expect(w3cTraceId('4bf92f3577b34da6a3ce929d0e0e4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(w3cTraceId('my-trace')).toMatch(/^[0-9a-f]{32}$/);
    expect(w3cTraceId('my-trace')).toBe(w3cTraceId('my-trace'));
    expect(w3cTraceId('my-trace')).not.toBe(w3cTraceId('my-trace-2'));
  });
});

describe('the batch queue', () => {
  const quiet = createLogger({ level: 'silent' });

  test('a batch goes when batchSize entries wait; the bound holds and drops are counted and warned about once per interval', async () => {
    const writes: number[][] = [];
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const logs = memoryLogger('warn');
    const q = new BatchQueue<number>({
      maxEntries: 10, maxBytes: 1e9, batchSize: 4, flushIntervalMs: 60_000, maxWriteAttempts: 3, warnIntervalMs: 60_000, logger: logs.logger,
      write: async (batch) => {
        await gate;
        writes.push(batch);
      },
    });
    q.start();
    for (let i = 0; i < 25; i++) q.push(i, 10);
    // The first batch (0..3) is being written and still counts: the queue holds 10, 15 were dropped.
    expect(q.depth).toBe(10);
    expect(q.stats().dropped.queue_full).toBe(15);
    expect(logs.lines().filter((l) => l.msg.includes('dropped'))).toHaveLength(1);
    release();
    gate = Promise.resolve();
    await q.flush();
    expect(writes.flat()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(q.stats()).toMatchObject({ depth: 0, accepted: 10, written: 10, batches: 3 });
    await q.close(1000);
  });

  test('the byte bound holds too', () => {
    const q = new BatchQueue<number>({ maxEntries: 100, maxBytes: 100, batchSize: 50, flushIntervalMs: 60_000, maxWriteAttempts: 1, warnIntervalMs: 0, logger: quiet, write: async () => undefined });
    expect(q.push(1, 60)).toBe(true);
    expect(q.push(2, 60)).toBe(false);
    expect(q.push(3, 40)).toBe(true);
    expect(q.stats()).toMatchObject({ depth: 2, bytes: 100, dropped: { queue_full: 1 } });
  });

  test('a flush every interval writes a partial batch', async () => {
    const writes: number[][] = [];
    const q = new BatchQueue<number>({ maxEntries: 100, maxBytes: 1e9, batchSize: 50, flushIntervalMs: 20, maxWriteAttempts: 1, warnIntervalMs: 0, logger: quiet, write: async (b) => void writes.push(b) });
    q.start();
    q.push(1, 1);
    q.push(2, 1);
    await new Promise((r) => setTimeout(r, 80));
    expect(writes).toEqual([[1, 2]]);
    await q.close(100);
  });

  test('a failing write is retried, then dropped and counted as write_failed', async () => {
    let calls = 0;
    const q = new BatchQueue<number>({
      maxEntries: 100, maxBytes: 1e9, batchSize: 2, flushIntervalMs: 10, maxWriteAttempts: 3, warnIntervalMs: 0, logger: quiet,
      write: async () => {
        calls++;
        throw new Error('store down');
      },
    });
    q.start();
    q.push(1, 1);
    q.push(2, 1);
    await new Promise((r) => setTimeout(r, 150));
    expect(calls).toBe(3);
    expect(q.stats()).toMatchObject({ depth: 0, written: 0, writeErrors: 3, dropped: { write_failed: 2 } });
    await q.close(100);
  });

  test('close writes what is left; past its timeout the rest is counted as shutdown drops; pushes after close are dropped', async () => {
    const written: number[] = [];
    const q = new BatchQueue<number>({ maxEntries: 100, maxBytes: 1e9, batchSize: 5, flushIntervalMs: 60_000, maxWriteAttempts: 1, warnIntervalMs: 0, logger: quiet, write: async (b) => void written.push(...b) });
    q.start();
    for (let i = 0; i < 12; i++) q.push(i, 1);
    await q.close(1000);
    expect(written).toHaveLength(12);
    expect(q.push(99, 1)).toBe(false);
    expect(q.stats().dropped.shutdown).toBe(1);

    const slow = new BatchQueue<number>({ maxEntries: 100, maxBytes: 1e9, batchSize: 5, flushIntervalMs: 60_000, maxWriteAttempts: 1, warnIntervalMs: 0, logger: quiet, write: () => new Promise((r) => setTimeout(r, 100)) });
    slow.start();
    for (let i = 0; i < 20; i++) slow.push(i, 1);
    await slow.close(150);
    const s = slow.stats();
    expect(s.written + s.dropped.shutdown).toBe(20);
    expect(s.dropped.shutdown).toBeGreaterThan(0);
  });
});
