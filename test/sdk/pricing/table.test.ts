import { describe, expect, test } from 'vitest';
import { componentsOf, costOf, PricingTable, type PricingData } from '../../../sdk/pricing/table.js';

/** A price list written for these tests (the rates are Anthropic's, Google's and OpenAI's public ones, as examples). */
const DATA: PricingData = {
  version: 'test-list 1',
  aliases: { 'vertex-ai': ['google', 'anthropic'], bedrock: ['anthropic'] },
  providers: {
    anthropic: {
      models: [
        { id: 'claude-sonnet-4-5', match: { starts_with: 'claude-sonnet-4-5' }, prices: { input: 3, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6, output: 15 } },
        { id: 'claude-opus-4', match: { or: [{ equals: 'claude-opus-4-0' }, { equals: 'claude-opus-4' }] }, prices: { input: 15, output: 75 } },
      ],
    },
    google: {
      models: [
        {
          id: 'gemini-2.5-pro',
          match: { equals: 'gemini-2.5-pro' },
          prices: {
            input: { base: 1.25, tiers: [{ above: 200_000, price: 2.5 }] },
            cache_read: { base: 0.125, tiers: [{ above: 200_000, price: 0.25 }] },
            output: { base: 10, tiers: [{ above: 200_000, price: 15 }] },
          },
        },
      ],
    },
    openai: {
      models: [
        { id: 'o3', match: { equals: 'o3' }, prices: [{ prices: { input: 10, output: 40 } }, { from: '2025-06-10', prices: { input: 2, cache_read: 0.5, output: 8 } }] },
        { id: 'gpt-5', match: { equals: 'gpt-5' }, prices: { input: 1.25, cache_read: 0.125, output: 10 }, service_tiers: { flex: { input: 0.625, cache_read: 0.0625, output: 5 } } },
        { id: 'gpt-4o', match: { equals: 'gpt-4o' }, prices: { input: 2.5, cache_read: 1.25, output: 10 } },
        { id: 'gpt-4o-audio', match: { regex: '^gpt-4o-audio-preview' }, prices: { input: 2.5, output: 10, input_audio: 40, output_audio: 80 } },
      ],
    },
    deepseek: {
      models: [{ id: 'deepseek-chat', prices: [{ prices: { input: 0.27, output: 1.1 } }, { utc_time: { start: '16:30', end: '00:30' }, prices: { input: 0.135, output: 0.55 } }] }],
    },
    ollama: { '*': { input: 0, output: 0 } },
  },
};
const table = new PricingTable(DATA);
const usage = (prompt: number, completion: number, more: Record<string, number> = {}) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...more });
const close = (a: number | null, b: number) => expect(a).toBeCloseTo(b, 12);

describe('what a request costs', () => {
  test('cache writes at their rates, 5-minute and 1-hour apart; reads at theirs; the rest at input', () => {
    // 10,000 prompt tokens: 2,000 read, 3,000 written (1,000 for an hour), 5,000 plain; 500 out.
    const u = usage(10_000, 500, { cached_tokens: 2_000, cache_write_tokens: 3_000, cache_write_1h_tokens: 1_000 });
    const p = table.price('anthropic', 'claude-sonnet-4-5-20250929', u, { at: Date.UTC(2026, 0, 1) });
    expect(p.status).toBe('priced');
    expect(p.price_id).toBe('anthropic/claude-sonnet-4-5');
    expect(p.version).toBe('test-list 1');
    expect(p.components.map((c) => [c.name, c.tokens, c.rate])).toEqual([
      ['input', 5_000, 3],
      ['cache_read', 2_000, 0.3],
      ['cache_write', 2_000, 3.75],
      ['cache_write_1h', 1_000, 6],
      ['output', 500, 15],
    ]);
    close(p.cost, (5_000 * 3 + 2_000 * 0.3 + 2_000 * 3.75 + 1_000 * 6 + 500 * 15) / 1e6);
    // Through Bedrock's region and vendor prefix and version suffix, from the anthropic list.
    expect(table.price('bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', u).cost).toBe(p.cost);
  });

  test('a prompt over a tier pays the tier for every token of it', () => {
    const small = table.price('google', 'gemini-2.5-pro', usage(200_000, 1_000));
    const large = table.price('vertex-ai', 'gemini-2.5-pro', usage(250_000, 1_000, { cached_tokens: 50_000 }));
    expect(small.tier_above).toBeNull();
    close(small.cost, (200_000 * 1.25 + 1_000 * 10) / 1e6);
    expect(large.tier_above).toBe(200_000);
    close(large.cost, (200_000 * 2.5 + 50_000 * 0.25 + 1_000 * 15) / 1e6);
  });

  test('the price in force when the request ran; a time-of-day price in its hours (UTC)', () => {
    close(table.price('openai', 'o3', usage(1_000_000, 1_000_000), { at: Date.UTC(2025, 5, 1) }).cost, 50);
    close(table.price('openai', 'o3', usage(1_000_000, 1_000_000), { at: Date.UTC(2025, 5, 11) }).cost, 10);
    close(table.price('deepseek', 'deepseek-chat', usage(1_000_000, 0), { at: Date.UTC(2026, 0, 1, 12) }).cost, 0.27);
    close(table.price('deepseek', 'deepseek-chat', usage(1_000_000, 0), { at: Date.UTC(2026, 0, 1, 23) }).cost, 0.135);
    close(table.price('deepseek', 'deepseek-chat', usage(1_000_000, 0), { at: Date.UTC(2026, 0, 1, 0, 15) }).cost, 0.135);
  });

  test('a service tier at its own rates; one the list does not price is unpriced, not guessed', () => {
    const u = usage(1_000, 100, { cached_tokens: 200 });
    close(table.price('openai', 'gpt-5', u, { serviceTier: 'flex' }).cost, (800 * 0.625 + 200 * 0.0625 + 100 * 5) / 1e6);
    close(table.price('openai', 'gpt-5', u, { serviceTier: 'default' }).cost, (800 * 1.25 + 200 * 0.125 + 100 * 10) / 1e6);
    const priority = table.price('openai', 'gpt-5', u, { serviceTier: 'priority' });
    expect([priority.cost, priority.status, priority.service_tier]).toEqual([null, 'unpriced', 'priority']);
    expect(priority.reason).toContain('priority');
  });

  test('a tier name that is no tier the entry lists (an object property name among them) is unpriced', () => {
    for (const tier of ['constructor', '__proto__', 'toString', 'scale']) {
      const p = table.price('openai', 'gpt-5', usage(10, 10), { serviceTier: tier });
      expect([p.cost, p.status], tier).toEqual([null, 'unpriced']);
    }
    // Groq's on_demand is its standard tier.
    expect(table.price('openai', 'gpt-5', usage(1_000_000, 0), { serviceTier: 'on_demand' }).cost).toBeCloseTo(1.25, 12);
  });

  test("a list's `*` prices its own provider's models that no entry of any list names, and nothing else", () => {
    const withAny = new PricingTable({
      aliases: { 'azure-openai': ['azure', 'openai'] },
      providers: {
        openai: { models: [{ id: '*', prices: { input: 100, output: 100 } }, { id: 'gpt-4o', prices: { input: 2.5, output: 10 } }] },
        azure: { models: [] },
        ollama: { '*': { input: 0, output: 0 } },
      },
    });
    expect(withAny.price('openai', 'gpt-4o', usage(1_000_000, 0)).cost).toBeCloseTo(2.5, 12);
    expect(withAny.price('azure-openai', 'gpt-4o', usage(1_000_000, 0)).cost).toBeCloseTo(2.5, 12);
    expect(withAny.price('openai', 'my-fine-tune', usage(1_000_000, 0)).price_id).toBe('openai/*');
    expect(withAny.price('ollama', 'llama3', usage(1_000_000, 0)).cost).toBe(0);
    // A model whose provider is not known yet is not priced by some list's `*`.
    expect(withAny.lookupModel('models/gemini-2.5-flash')).toBeNull();
    expect(withAny.lookupModel('gpt-4o')).toEqual({ input: 2.5, output: 10 });
  });

  test('reasoning and audio tokens as their own lines; the multiplier on the sum', () => {
    const u = usage(1_000, 500, { input_audio_tokens: 400, output_audio_tokens: 300, reasoning_tokens: 100 });
    const p = table.price('openai', 'gpt-4o-audio-preview-2025-06-03', u, { multiplier: 0.5 });
    expect(p.components.map((c) => [c.name, c.tokens, c.rate])).toEqual([
      ['input', 600, 2.5],
      ['input_audio', 400, 40],
      ['output', 100, 10],
      ['reasoning', 100, 10],
      ['output_audio', 300, 80],
    ]);
    close(p.cost, 0.5 * ((600 * 2.5 + 400 * 40 + 100 * 10 + 100 * 10 + 300 * 80) / 1e6));
    expect(p.multiplier).toBe(0.5);
  });

  test('no guessing: a model no rule names is unpriced; a trailing date is the one rule that maps an id to another', () => {
    expect(table.price('openai', 'gpt-5.2', usage(10, 10)).status).toBe('unpriced');
    expect(table.price('openai', 'gpt-5-mini', usage(10, 10)).status).toBe('unpriced');
    expect(table.price('anthropic', 'claude-opus-4-5-20251101', usage(10, 10)).status).toBe('unpriced');
    expect(table.price('openai', 'gpt-4o-2024-08-06', usage(10, 10)).price_id).toBe('openai/gpt-4o');
    expect(table.price('openai', 'gpt-4o-20240806', usage(10, 10)).price_id).toBe('openai/gpt-4o');
    expect(table.price('google', 'models/gemini-2.5-pro', usage(10, 10)).price_id).toBe('google/gemini-2.5-pro');
    const unknown = table.price('openai', 'some-model', usage(10, 10));
    expect([unknown.cost, unknown.status, unknown.price_id]).toEqual([null, 'unpriced', null]);
    expect(unknown.reason).toBe('no price for model "some-model" at provider "openai"');
    expect(table.price('openai', 'gpt-4o', null).status).toBe('no_usage');
    // A list's `*` prices every model of that list, on purpose (a local server).
    expect(table.price('ollama', 'llama3', usage(10, 10)).cost).toBe(0);
  });

  test('counts that do not add up never price a token twice', () => {
    const { components } = componentsOf({ input: 1, output: 1 }, usage(100, 10, { cached_tokens: 80, cache_write_tokens: 80, reasoning_tokens: 50 }));
    expect(components.map((c) => [c.name, c.tokens])).toEqual([
      ['input', 0],
      ['cache_read', 80],
      ['cache_write', 20],
      ['output', 0],
      ['reasoning', 10],
    ]);
    expect(costOf({ input: 1, output: 1 }, usage(100, 10, { cached_tokens: 80, cache_write_tokens: 80, reasoning_tokens: 50 }))).toBeCloseTo(110 / 1e6, 15);
  });

  test('a bad entry stops the start, naming it', () => {
    expect(() => new PricingTable({ providers: { x: { models: [{ id: 'm', prices: { input: -1, output: 0 } }] } } })).toThrow('pricing: x / m: input must be a number of at least 0');
    expect(() => new PricingTable({ providers: { x: { models: [{ id: 'm', prices: { input: 1 } as never }] } } })).toThrow('pricing: x / m: output is required');
    expect(() => new PricingTable({ providers: { x: { models: [{ id: 'm', match: { regex: '(' }, prices: { input: 1, output: 1 } }] } } })).toThrow(/pricing: x \/ m: match regex/);
    expect(() => new PricingTable({ providers: { x: { models: [{ id: 'm', prices: [{ from: 'soon', prices: { input: 1, output: 1 } }] }] } } })).toThrow(/x \/ m: prices\[0\]: "from" must be a day/);
    expect(() => new PricingTable({ providers: { x: { models: [{ id: 'm', prices: { input: 1, output: 1, cached: 2 } as never }] } } })).toThrow(/unknown rate "cached"/);
    expect(() => new PricingTable({ providers: { x: { m: { input: Number.NaN, output: 0 } } } })).toThrow(/x \/ m/);
  });
});
