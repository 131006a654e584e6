import { readFileSync } from 'node:fs';
import { calcPrice, waitForUpdate, type Provider } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Usage } from '../../core/index.js';
import { PricingTable, type ModelEntry, type PriceBreakdown, type PricingData } from '../../sdk/pricing/table.js';
import { ALIASES, generate, LISTS, OVERRIDES_FILE, PRICES_FILE, readOverrides, regexesOf, type GenerateResult } from './update-prices.js';

/**
 * The bundled price list (sdk/pricing/prices.json) is generated from @pydantic/genai-prices and
 * sdk/pricing/overrides.json by `npm run prices:update`. These tests pin the committed file to
 * the generator, check the conversion against genai-prices' own calculator, and spot-check the
 * result with the gateway's engine against rates copied here from the providers' price pages.
 */

const committed = readFileSync(PRICES_FILE, 'utf8');
const data = JSON.parse(committed) as PricingData;
const table = new PricingTable(data);
let result: GenerateResult;

beforeAll(async () => {
  // The generator reads the package's bundled data only: any fetch is a failure.
  vi.stubGlobal('fetch', () => {
    throw new Error('update-prices must not fetch');
  });
  result = await generate();
});
afterAll(() => {
  vi.unstubAllGlobals();
});

const usage = (u: Partial<Usage> & { prompt_tokens: number; completion_tokens: number }): Usage => ({ total_tokens: u.prompt_tokens + u.completion_tokens, ...u });
const AT = Date.parse('2026-12-01T12:00:00Z');
const componentsOf = (b: PriceBreakdown) => Object.fromEntries(b.components.map((c) => [c.name, { tokens: c.tokens, rate: c.rate }]));
const close = (a: number | null, b: number) => {
  expect(a).not.toBeNull();
  expect(Math.abs(a! - b)).toBeLessThan(1e-9 * Math.max(1, Math.abs(b)));
};

describe('generated prices.json', () => {
  it('is exactly what `npm run prices:update` produces from the installed genai-prices and the overrides', () => {
    expect(result.data.version).toBe(`genai-prices ${result.packageVersion} + gateway overrides ${result.overridesDate}`);
    // Not toBe(text): a stale file would print two 160 KB strings.
    const stale = committed !== result.text;
    expect(stale, 'sdk/pricing/prices.json is stale: run `npm run prices:update` and commit the result').toBe(false);
  });

  it('says where it comes from and what it is in', () => {
    expect(data.version).toMatch(/^genai-prices \d+\.\d+\.\d+ \+ gateway overrides \d{4}-\d{2}-\d{2}$/);
    expect(data.currency).toBe('USD');
    expect(data.unit).toBe('per 1M tokens');
    expect(data.note).toContain('npm run prices:update');
    expect(Object.keys(data.providers)).toEqual(LISTS.map(([, list]) => list));
    expect(data.aliases).toEqual(ALIASES);
    for (const [provider, lists] of Object.entries(data.aliases!)) for (const list of lists) expect(data.providers[list], `${provider} → ${list}`).toBeDefined();
  });

  it('compiles every match regex in JavaScript, as written and as the table lower-cases it', () => {
    const regexes = regexesOf(data);
    expect(regexes.length).toBeGreaterThan(10);
    for (const [where, pattern] of regexes) {
      expect(() => new RegExp(pattern), where).not.toThrow();
      expect(() => new RegExp(pattern.toLowerCase(), 'i'), where).not.toThrow();
      expect(pattern, `${where}: an upper-case escape changes meaning once lower-cased`).not.toMatch(/\\[A-Z]/);
    }
  });

  it('keeps the overrides small, sourced, and out of the output', () => {
    const o = readOverrides(OVERRIDES_FILE);
    expect(o.overrides.length).toBeLessThan(60);
    for (const e of o.overrides) expect(e.source.length, `${e.list}/${e.id}`).toBeGreaterThan(40);
    expect(committed).not.toContain('"source"');
    expect(result.overridesApplied).toHaveLength(o.overrides.length);
  });

  it('prices flex at half the standard rates for every model that has it', () => {
    for (const { models } of Object.values(data.providers) as Array<{ models: ModelEntry[] }>) {
      for (const m of models) {
        const flex = m.service_tiers?.flex;
        if (flex === undefined) continue;
        const std = table.lookup('openai', m.id, AT)!;
        for (const k of ['input', 'output', 'cache_read'] as const) expect(flex[k], `${m.id} flex ${k}`).toBe((std[k] as number) / 2);
      }
    }
  });
});

describe('the conversion prices as genai-prices does', () => {
  // Usage shapes, in genai-prices' terms (input_tokens is the whole prompt) and ours.
  const shapes = [
    { prompt: 1_000, cacheRead: 0, write: 0, write1h: 0, audioIn: 0, imageIn: 0, out: 500, reasoning: 0, audioOut: 0 },
    { prompt: 200_000, cacheRead: 50_000, write: 20_000, write1h: 5_000, audioIn: 0, imageIn: 0, out: 2_000, reasoning: 700, audioOut: 0 },
    { prompt: 300_000, cacheRead: 60_000, write: 30_000, write1h: 10_000, audioIn: 4_000, imageIn: 3_000, out: 8_000, reasoning: 2_000, audioOut: 1_000 },
  ];
  const times = ['2025-03-01T12:00:00Z', '2025-07-01T02:30:00Z', '2025-09-01T18:00:00Z', '2026-09-01T02:30:00Z', '2026-09-01T07:00:00Z', '2026-09-01T20:00:00Z', '2026-12-01T12:00:00Z'];

  it('gives every converted model the same input + output cost as calcPrice, at every time and usage shape', async () => {
    const all = (await waitForUpdate()) as Provider[];
    const merged = new Set(readOverrides().overrides.filter((o) => o.merge_prices !== undefined || o.prices !== undefined).map((o) => `${o.list}/${o.id}`));
    const skipped = new Set(result.skipped);
    let compared = 0;
    const mismatches: string[] = [];
    for (const [theirs, list] of LISTS) {
      const provider = all.find((p) => p.id === theirs)!;
      for (const model of provider.models) {
        if (merged.has(`${list}/${model.id}`) || skipped.has(`${list}/${model.id}`)) continue;
        for (const time of times) {
          for (const s of shapes) {
            const their = calcPrice(
              {
                input_tokens: s.prompt,
                cache_read_tokens: s.cacheRead,
                cache_write_tokens: s.write,
                cache_write_1h_tokens: s.write1h,
                input_audio_tokens: s.audioIn,
                input_image_tokens: s.imageIn,
                cache_audio_read_tokens: 0,
                cache_image_read_tokens: 0,
                output_tokens: s.out,
                output_reasoning_tokens: s.reasoning,
                output_audio_tokens: s.audioOut,
              },
              model.id,
              { providerId: theirs, timestamp: new Date(time) },
            );
            const ours = table.price(
              list,
              model.id,
              usage({
                prompt_tokens: s.prompt,
                cached_tokens: s.cacheRead,
                cache_write_tokens: s.write,
                cache_write_1h_tokens: s.write1h,
                input_audio_tokens: s.audioIn,
                input_image_tokens: s.imageIn,
                completion_tokens: s.out,
                reasoning_tokens: s.reasoning,
                output_audio_tokens: s.audioOut,
              }),
              { at: Date.parse(time) },
            );
            compared += 1;
            const where = `${list}/${model.id} @${time} prompt ${s.prompt}`;
            if (their === null) {
              if (ours.status !== 'unpriced') mismatches.push(`${where}: genai-prices has no price, ours ${ours.price_id}`);
              continue;
            }
            if (ours.price_id !== `${list}/${their.model.id}`) {
              mismatches.push(`${where}: genai-prices uses ${their.model.id}, ours ${ours.price_id}`);
              continue;
            }
            const expected = their.input_price + their.output_price;
            if (Math.abs((ours.cost ?? NaN) - expected) > 1e-9 * Math.max(1, expected)) mismatches.push(`${where}: genai-prices ${expected}, ours ${ours.cost}`);
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(20_000);
    expect(mismatches.slice(0, 20)).toEqual([]);
  });
});

describe('spot checks against the providers’ price pages (rates written here, not read from the table)', () => {
  const price = (provider: string, model: string, u: Usage, opts: { at?: number; serviceTier?: string } = {}) => table.price(provider, model, u, { at: AT, ...opts });
  /** 1M prompt tokens of which 400k cached, 1M output: input 600k at `input`, 400k at `cached`, 1M at `output`. */
  const oneMillion = usage({ prompt_tokens: 1_000_000, cached_tokens: 400_000, completion_tokens: 1_000_000 });
  const expectRates = (b: PriceBreakdown, id: string, input: number, cached: number, output: number) => {
    expect(b.status).toBe('priced');
    expect(b.price_id).toBe(id);
    expect(componentsOf(b)).toEqual({
      input: { tokens: 600_000, rate: input },
      cache_read: { tokens: 400_000, rate: cached },
      output: { tokens: 1_000_000, rate: output },
    });
    close(b.cost, 0.6 * input + 0.4 * cached + output);
  };

  it('gpt-4o-mini: $0.15 input, $0.075 cached, $0.60 output (openai.com/api/pricing)', () => {
    expectRates(price('openai', 'gpt-4o-mini', oneMillion), 'openai/gpt-4o-mini', 0.15, 0.075, 0.6);
  });

  it('gpt-5: $1.25 / $0.125 / $10; flex half; priority $2.50 / $0.25 / $20; no priority for gpt-5-nano', () => {
    expectRates(price('openai', 'gpt-5', oneMillion), 'openai/gpt-5', 1.25, 0.125, 10);
    expectRates(price('openai', 'gpt-5-2025-08-07', oneMillion, { serviceTier: 'flex' }), 'openai/gpt-5', 0.625, 0.0625, 5);
    const priority = price('openai', 'gpt-5', oneMillion, { serviceTier: 'priority' });
    expectRates(priority, 'openai/gpt-5', 2.5, 0.25, 20);
    expect(priority.service_tier).toBe('priority');
    expectRates(price('openai', 'gpt-5', oneMillion, { serviceTier: 'default' }), 'openai/gpt-5', 1.25, 0.125, 10);
    const nano = price('openai', 'gpt-5-nano', oneMillion, { serviceTier: 'priority' });
    expect(nano.status).toBe('unpriced');
    expect(nano.cost).toBeNull();
  });

  it('claude-sonnet-4-5: $3 input, $0.30 cache read, $3.75 5-minute write, $6 1-hour write, $15 output; $6 / $0.60 / $7.50 / $12 / $22.50 above 200k', () => {
    const u = usage({ prompt_tokens: 100_000, cached_tokens: 20_000, cache_write_tokens: 30_000, cache_write_1h_tokens: 10_000, completion_tokens: 5_000 });
    const b = price('anthropic', 'claude-sonnet-4-5-20250929', u);
    expect(b.price_id).toBe('anthropic/claude-sonnet-4-5');
    expect(b.tier_above).toBeNull();
    expect(componentsOf(b)).toEqual({
      input: { tokens: 50_000, rate: 3 },
      cache_read: { tokens: 20_000, rate: 0.3 },
      cache_write: { tokens: 20_000, rate: 3.75 },
      cache_write_1h: { tokens: 10_000, rate: 6 },
      output: { tokens: 5_000, rate: 15 },
    });
    close(b.cost, (50_000 * 3 + 20_000 * 0.3 + 20_000 * 3.75 + 10_000 * 6 + 5_000 * 15) / 1e6);

    const long = price('anthropic', 'claude-sonnet-4-5', usage({ prompt_tokens: 300_000, cached_tokens: 100_000, cache_write_tokens: 50_000, cache_write_1h_tokens: 10_000, completion_tokens: 1_000 }));
    expect(long.tier_above).toBe(200_000);
    expect(componentsOf(long)).toEqual({
      input: { tokens: 150_000, rate: 6 },
      cache_read: { tokens: 100_000, rate: 0.6 },
      cache_write: { tokens: 40_000, rate: 7.5 },
      cache_write_1h: { tokens: 10_000, rate: 12 },
      output: { tokens: 1_000, rate: 22.5 },
    });
  });

  it('claude-sonnet-4 (override): $3 / $15 up to 200k prompt tokens, $6 / $22.50 above (Anthropic long-context pricing)', () => {
    const short = price('anthropic', 'claude-sonnet-4-20250514', usage({ prompt_tokens: 200_000, completion_tokens: 1_000 }));
    expect(short.price_id).toBe('anthropic/claude-sonnet-4-0');
    expect(componentsOf(short)).toEqual({ input: { tokens: 200_000, rate: 3 }, output: { tokens: 1_000, rate: 15 } });
    const long = price('anthropic', 'claude-sonnet-4-20250514', usage({ prompt_tokens: 200_001, cached_tokens: 1, cache_write_tokens: 2, cache_write_1h_tokens: 1, completion_tokens: 1_000 }));
    expect(componentsOf(long)).toEqual({
      input: { tokens: 199_998, rate: 6 },
      cache_read: { tokens: 1, rate: 0.6 },
      cache_write: { tokens: 1, rate: 7.5 },
      cache_write_1h: { tokens: 1, rate: 12 },
      output: { tokens: 1_000, rate: 22.5 },
    });
  });

  it('gemini-2.5-pro: $1.25 / $10 up to 200k prompt tokens, $2.50 / $15 above (ai.google.dev pricing)', () => {
    const at200k = price('google', 'gemini-2.5-pro', usage({ prompt_tokens: 200_000, completion_tokens: 1_000 }));
    expect(at200k.price_id).toBe('google/gemini-2.5-pro');
    expect(at200k.tier_above).toBeNull();
    expect(componentsOf(at200k)).toEqual({ input: { tokens: 200_000, rate: 1.25 }, output: { tokens: 1_000, rate: 10 } });
    close(at200k.cost, 0.25 + 0.01);
    const above = price('google', 'gemini-2.5-pro', usage({ prompt_tokens: 200_001, completion_tokens: 1_000 }));
    expect(above.tier_above).toBe(200_000);
    expect(componentsOf(above)).toEqual({ input: { tokens: 200_001, rate: 2.5 }, output: { tokens: 1_000, rate: 15 } });
    close(above.cost, (200_001 * 2.5 + 1_000 * 15) / 1e6);
    expect(price('google', 'gemini-2.5-pro-preview-tts', oneMillion).price_id).toBe('google/gemini-2.5-pro-tts');
  });

  it('gpt-5.2 is not priced as gpt-5 ($1.75 / $0.175 / $14)', () => {
    const b = price('openai', 'gpt-5.2', oneMillion);
    expect(b.price_id).not.toBe('openai/gpt-5');
    expectRates(b, 'openai/gpt-5.2', 1.75, 0.175, 14);
  });

  it('o4-mini-deep-research is not priced as o4-mini ($2 / $0.50 / $8)', () => {
    expectRates(price('openai', 'o4-mini-deep-research', oneMillion), 'openai/o4-mini-deep-research', 2, 0.5, 8);
    expectRates(price('openai', 'o4-mini', oneMillion), 'openai/o4-mini', 1.1, 0.275, 4.4);
  });

  it('claude-opus-4-5-20251101 is priced as Opus 4.5 ($5 / $0.50 / $25), not as Opus 4 ($15 / $75)', () => {
    expectRates(price('anthropic', 'claude-opus-4-5-20251101', oneMillion), 'anthropic/claude-opus-4-5', 5, 0.5, 25);
    expectRates(price('anthropic', 'claude-opus-4-20250514', oneMillion), 'anthropic/claude-opus-4-0', 15, 1.5, 75);
  });

  it('gpt-4o-2024-08-06 is priced as gpt-4o ($2.50 / $1.25 / $10)', () => {
    expectRates(price('openai', 'gpt-4o-2024-08-06', oneMillion), 'openai/gpt-4o', 2.5, 1.25, 10);
    expectRates(price('openai', 'gpt-4o-2024-08-06', oneMillion, { serviceTier: 'priority' }), 'openai/gpt-4o', 4.25, 2.125, 17);
  });

  it('an unknown model is unpriced', () => {
    for (const provider of ['openai', 'anthropic', 'bedrock', 'vertex-ai', 'azure-openai', 'no-such-provider']) {
      const b = price(provider, 'zz-no-such-model-1', oneMillion);
      expect(b.status, provider).toBe('unpriced');
      expect(b.cost).toBeNull();
      expect(b.price_id).toBeNull();
    }
  });

  it('a Bedrock cross-region id prices as Claude Sonnet 4 under bedrock ($3 / $0.30 / $3.75 / $15; $6 / $22.50 above 200k)', () => {
    const id = 'us.anthropic.claude-sonnet-4-20250514-v1:0';
    const b = price('bedrock', id, usage({ prompt_tokens: 10_000, cached_tokens: 2_000, cache_write_tokens: 3_000, completion_tokens: 1_000 }));
    expect(b.price_id).toBe('bedrock/regional.anthropic.claude-sonnet-4-20250514-v1:0');
    expect(componentsOf(b)).toEqual({
      input: { tokens: 5_000, rate: 3 },
      cache_read: { tokens: 2_000, rate: 0.3 },
      cache_write: { tokens: 3_000, rate: 3.75 },
      output: { tokens: 1_000, rate: 15 },
    });
    close(b.cost, (5_000 * 3 + 2_000 * 0.3 + 3_000 * 3.75 + 1_000 * 15) / 1e6);
    const long = price('bedrock', id, usage({ prompt_tokens: 250_000, completion_tokens: 1_000 }));
    expect(componentsOf(long)).toEqual({ input: { tokens: 250_000, rate: 6 }, output: { tokens: 1_000, rate: 22.5 } });
    // A 1-hour write on Bedrock Sonnet 4.5 (global endpoint): 2 × $3.
    const oneHour = price('bedrock', 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', usage({ prompt_tokens: 1_000, cache_write_tokens: 1_000, cache_write_1h_tokens: 1_000, completion_tokens: 0 }));
    expect(componentsOf(oneHour).cache_write_1h).toEqual({ tokens: 1_000, rate: 6 });
  });

  it('gemini-2.5-flash under vertex-ai prices from the google list ($0.30 / $0.03 / $2.50)', () => {
    expectRates(price('vertex-ai', 'gemini-2.5-flash', oneMillion), 'google/gemini-2.5-flash', 0.3, 0.03, 2.5);
    // Claude on Vertex AI: the google list's Vertex entry first.
    expect(price('vertex-ai', 'claude-sonnet-4-5@20250929', oneMillion).price_id).toBe('google/claude-sonnet-4-5');
  });

  it('gpt-4o under azure-openai prices from the openai list ($2.50 / $1.25 / $10)', () => {
    expectRates(price('azure-openai', 'gpt-4o', oneMillion), 'openai/gpt-4o', 2.5, 1.25, 10);
    expect(price('azure-openai', 'phi-4', oneMillion).price_id).toBe('azure/phi-4');
  });

  it('deepseek-chat: standard $0.27 / $0.07 / $1.10 from 00:30 to 16:30 UTC, off-peak $0.135 / $0.035 / $0.55 otherwise', () => {
    expectRates(price('deepseek', 'deepseek-chat', oneMillion, { at: Date.parse('2025-09-01T12:00:00Z') }), 'deepseek/deepseek-chat', 0.27, 0.07, 1.1);
    expectRates(price('deepseek', 'deepseek-chat', oneMillion, { at: Date.parse('2025-09-01T18:00:00Z') }), 'deepseek/deepseek-chat', 0.135, 0.035, 0.55);
  });

  it('o3 follows its June 2025 price cut ($10 / $40 before 2025-06-10, $2 / $8 after)', () => {
    expectRates(price('openai', 'o3', oneMillion, { at: Date.parse('2025-06-01T00:00:00Z') }), 'openai/o3', 10, 0.5, 40);
    expectRates(price('openai', 'o3', oneMillion, { at: Date.parse('2025-06-10T00:00:00Z') }), 'openai/o3', 2, 0.5, 8);
  });

  it('leaves models priced only per hour of audio unpriced rather than free; the overrides price them by the second', () => {
    expect(result.skipped).toContain('openai/whisper-1');
    // Tokens are not what whisper-1 bills: unpriced, not free.
    expect(price('openai', 'whisper-1', oneMillion).status).toBe('unpriced');
    expect(price('openai', 'whisper-1', { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, audio_seconds: 60 })).toMatchObject({ status: 'priced', cost: 0.006 });
  });
});

