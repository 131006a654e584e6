/**
 * Generates `sdk/pricing/prices.json` (the gateway's bundled price list) from the npm package
 * `@pydantic/genai-prices` (a devDependency, pinned exactly) and the hand-kept
 * `sdk/pricing/overrides.json`. The gateway never imports the package: the JSON is committed.
 *
 *   npm run prices:update          # writes sdk/pricing/prices.json, prints what it left out
 *
 * `test/pricing/update-prices.test.ts` checks that the committed file is exactly what this
 * produces, so bumping the package (or editing the overrides) without regenerating fails.
 *
 * The package's data is read offline: `waitForUpdate()` resolves to the data bundled in the
 * package unless `updatePrices()` was called to fetch newer data, which this script never does.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { waitForUpdate, type ConditionalPrice, type MatchLogic, type ModelInfo, type Provider } from '@pydantic/genai-prices';
import { PricingTable, type DatedPrice, type MatchRule, type ModelEntry, type ModelPrice, type PricingData, type Rate } from '../../sdk/pricing/table.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const PRICES_FILE = join(ROOT, 'sdk/pricing/prices.json');
export const OVERRIDES_FILE = join(ROOT, 'sdk/pricing/overrides.json');
export const PACKAGE = '@pydantic/genai-prices';

/** genai-prices provider id → our list name (what `aliases` and the gateway's provider names refer to), in output order. */
export const LISTS: ReadonlyArray<readonly [string, string]> = [
  ['openai', 'openai'],
  ['anthropic', 'anthropic'],
  ['google', 'google'],
  ['aws', 'bedrock'],
  ['azure', 'azure'],
  ['groq', 'groq'],
  ['together', 'together-ai'],
  ['fireworks', 'fireworks-ai'],
  ['mistral', 'mistral-ai'],
  ['deepseek', 'deepseek'],
  ['x-ai', 'x-ai'],
  ['cerebras', 'cerebras'],
  ['perplexity', 'perplexity-ai'],
  ['cohere', 'cohere'],
  // Last: `lookupModel` (provider not known yet) tries the lists in file order, and OpenRouter's is a reseller's.
  ['openrouter', 'openrouter'],
];

/**
 * Their price keys (per million tokens) → ours. Both price the tokens of a kind that no more
 * specific priced kind claims: their `input_mtok` applies to `input_tokens` (the whole prompt)
 * minus the cache reads, cache writes, audio… the model has a price for, which is our `input`
 * (prompt tokens neither read from nor written to the cache, nor audio or image when those are
 * priced); a kind without its own price falls back to its parent's in both. Their
 * `cache_write_mtok` prices every cache write unless `cache_write_1h_mtok` prices the 1-hour
 * ones, as our `cache_write` / `cache_write_1h`. Every other key is dropped (and counted).
 */
export const KEY_MAP: Readonly<Record<string, keyof ModelPrice>> = {
  input_mtok: 'input',
  output_mtok: 'output',
  cache_read_mtok: 'cache_read',
  cache_write_mtok: 'cache_write',
  cache_write_1h_mtok: 'cache_write_1h',
  output_reasoning_mtok: 'reasoning',
  input_audio_mtok: 'input_audio',
  input_image_mtok: 'input_image',
  output_audio_mtok: 'output_audio',
};

/** The order rates are written in (stable diffs). */
const RATE_ORDER = ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h', 'reasoning', 'input_audio', 'input_image', 'output_audio'] as const;
/** Media models' own units (per image, per second, per million characters), kept as written, after the token rates. */
const UNIT_ORDER = ['per_image', 'per_second', 'per_million_characters'] as const;

/**
 * Gateway provider → the lists that price it, in order. A provider not named here prices from
 * the list of its own name. See {@link FALLBACKS} for how genai-prices' `fallback_model_providers`
 * map onto these.
 */
export const ALIASES: Readonly<Record<string, readonly string[]>> = {
  'vertex-ai': ['google', 'anthropic'],
  'azure-openai': ['azure', 'openai'],
  'azure-ai': ['azure'],
  bedrock: ['bedrock'],
};

/**
 * Every `fallback_model_providers` entry of the included providers, and what became of it. The
 * generator fails when the package lists one not decided here, so a bump that adds one is reviewed.
 */
export const FALLBACKS: Readonly<Record<string, string>> = {
  'google>anthropic': 'adopted: vertex-ai prices from google, then anthropic (Claude on Vertex AI at Anthropic list prices when the google list has no Vertex entry). Not for the `google` provider: the Gemini API serves no Claude.',
  'azure>openai': 'adopted: azure-openai prices from azure, then openai (Azure OpenAI global deployments bill OpenAI list prices; the azure list has the Azure-only entries).',
  'azure>anthropic': 'not adopted: Claude on Azure is called through the Anthropic Messages API, not through the azure-openai or azure-ai chat routes.',
  'azure>deepseek': "not adopted: the deepseek list is DeepSeek's own API, with off-peak hours that Azure does not have; Azure bills DeepSeek models at its own rates.",
  'azure>x-ai': "not adopted: the x-ai list is xAI's own API; Azure bills Grok models at its own rates, not known to equal xAI's.",
  'azure>moonshotai': 'not adopted: no moonshotai list is bundled.',
};

/** What the generator produced besides the file: counts for the summary and the tests. */
export interface GenerateResult {
  /** The file's text, as written to `prices.json`. */
  text: string;
  data: PricingData;
  packageVersion: string;
  overridesDate: string;
  /** Dropped price keys → how many price objects had them. */
  dropped: Record<string, number>;
  /** Models left out: only non-token prices (audio hours, pages…), so unpriced rather than free. */
  skipped: string[];
  /** Models with an empty price in genai-prices (free in their data): written as input 0, output 0. */
  zeroPriced: string[];
  /** `list/id: what` for every override applied. */
  overridesApplied: string[];
  /** Models per list. */
  counts: Record<string, number>;
}

interface Override {
  list: string;
  id: string;
  source: string;
  match?: MatchRule;
  prices?: ModelPrice | DatedPrice[];
  merge_prices?: Partial<ModelPrice>;
  service_tiers?: Record<string, ModelPrice>;
}

interface OverridesFile {
  updated: string;
  note?: string;
  overrides: Override[];
}

/** The installed package's version, checked against the exact pin in package.json. */
export function packageVersion(): string {
  const require = createRequire(import.meta.url);
  const main = require.resolve(PACKAGE);
  const pkg = JSON.parse(readFileSync(join(dirname(main), '..', 'package.json'), 'utf8')) as { name: string; version: string };
  if (pkg.name !== PACKAGE) throw new Error(`update-prices: ${main} is not ${PACKAGE}`);
  const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string> };
  const pinned = ours.devDependencies?.[PACKAGE];
  if (pinned !== pkg.version) {
    throw new Error(`update-prices: package.json pins ${PACKAGE} at ${String(pinned)} but ${pkg.version} is installed (pin it exactly and run npm install)`);
  }
  return pkg.version;
}

/** Builds the price list from the installed package and the overrides file. Reads no network. */
export async function generate(): Promise<GenerateResult> {
  const version = packageVersion();
  const all = await waitForUpdate();
  if (!Array.isArray(all)) throw new Error(`update-prices: ${PACKAGE} returned no provider data`);

  const dropped: Record<string, number> = {};
  const skipped: string[] = [];
  const zeroPriced: string[] = [];
  const providers: Record<string, { models: ModelEntry[] }> = {};

  for (const [theirs, list] of LISTS) {
    const provider = all.find((p) => p.id === theirs);
    if (provider === undefined) throw new Error(`update-prices: ${PACKAGE} ${version} has no provider "${theirs}"`);
    const models: ModelEntry[] = [];
    for (const model of provider.models) {
      const where = `${list}/${model.id}`;
      const entry = convertModel(model, where, dropped);
      if (entry === 'skip') skipped.push(where);
      else {
        if (entry.zero) zeroPriced.push(where);
        models.push(entry.entry);
      }
    }
    providers[list] = { models };
  }
  checkFallbacks(all);

  const overrides = readOverrides();
  const overridesApplied = applyOverrides(providers, overrides.overrides);

  const data: PricingData = {
    version: `genai-prices ${version} + gateway overrides ${overrides.updated}`,
    currency: 'USD',
    unit: 'per 1M tokens',
    note:
      `Generated by \`npm run prices:update\` (test/pricing/update-prices.ts) from the npm package ${PACKAGE} ${version} ` +
      '(MIT, https://github.com/pydantic/genai-prices) and the hand-kept sdk/pricing/overrides.json; do not edit by hand. ' +
      'Token prices only: per-request fees, tool calls (web search…), audio by the hour, pages, and cached-audio/cached-image rates are left out, ' +
      'and models priced only that way are not listed (unpriced). A model listed with no rates in genai-prices is free (0). ' +
      'OpenAI flex/priority rates and a few long-context tiers and 1-hour cache-write rates come from the overrides file, each with its source.',
    aliases: Object.fromEntries(Object.entries(ALIASES).map(([k, v]) => [k, [...v]])),
    providers,
  };

  // The table's own validation (rates, rules, dates, times): throws naming the entry.
  new PricingTable(data);
  checkRegexes(data);

  const counts: Record<string, number> = {};
  for (const [list, { models }] of Object.entries(providers)) counts[list] = models.length;
  return { text: serialize(data), data, packageVersion: version, overridesDate: overrides.updated, dropped, skipped, zeroPriced, overridesApplied, counts };
}

function convertModel(model: ModelInfo, where: string, dropped: Record<string, number>): { entry: ModelEntry; zero: boolean } | 'skip' {
  const entry: ModelEntry = { id: model.id, prices: { input: 0, output: 0 } };
  const match = convertRule(model.match, where);
  if (!('equals' in match && match.equals.toLowerCase() === model.id.toLowerCase())) entry.match = match;

  if (!Array.isArray(model.prices)) {
    const p = convertPrice(model.prices, where, dropped);
    if (p === 'skip') return 'skip';
    entry.prices = p.price;
    return { entry: ordered(entry), zero: p.zero };
  }
  const converted = (model.prices as ConditionalPrice[]).map((c) => ({ constraint: c.constraint, price: convertPrice(c.prices, where, dropped) }));
  const skips = converted.filter((c) => c.price === 'skip').length;
  if (skips === converted.length) return 'skip';
  if (skips > 0) throw new Error(`update-prices: ${where}: some of its dated prices have token rates and some have none; review`);
  entry.prices = datedPrices(
    converted.map((c) => ({ constraint: c.constraint, prices: (c.price as { price: ModelPrice }).price })),
    where,
  );
  return { entry: ordered(entry), zero: converted.some((c) => (c.price as { zero: boolean }).zero) };
}

function convertPrice(price: Record<string, unknown>, where: string, dropped: Record<string, number>): { price: ModelPrice; zero: boolean } | 'skip' {
  const out: Partial<Record<keyof ModelPrice, Rate>> = {};
  let keys = 0;
  for (const [key, value] of Object.entries(price)) {
    if (value === undefined) continue;
    keys += 1;
    const ours = KEY_MAP[key];
    if (ours === undefined) {
      dropped[key] = (dropped[key] ?? 0) + 1;
      continue;
    }
    out[ours] = convertRate(value, `${where} ${key}`);
  }
  // No rates at all: free in their data (calcPrice prices it at 0).
  if (keys === 0) return { price: { input: 0, output: 0 }, zero: true };
  // Only rates we do not compute with (audio hours, pages…): leave the model unpriced rather than free.
  if (out.input === undefined && out.output === undefined) return 'skip';
  if (out.input === undefined) throw new Error(`update-prices: ${where}: an output rate but no input rate; review`);
  // An input rate only (embeddings, old completion models): their output costs 0.
  if (out.output === undefined) out.output = 0;
  const result: Record<string, Rate> = {};
  for (const k of RATE_ORDER) if (out[k] !== undefined) result[k] = out[k]!;
  return { price: result as unknown as ModelPrice, zero: false };
}

function convertRate(value: unknown, where: string): Rate {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new Error(`update-prices: ${where}: not a price: ${value}`);
    return value;
  }
  const v = value as { base?: unknown; tiers?: unknown };
  if (v === null || typeof v !== 'object' || typeof v.base !== 'number' || !Array.isArray(v.tiers)) throw new Error(`update-prices: ${where}: not a price: ${JSON.stringify(value)}`);
  // Their tier applies when the prompt (input_tokens, cache included) is strictly greater than `start`: our `above`.
  const tiers = (v.tiers as Array<{ start: number; price: number }>)
    .map((t) => ({ above: t.start, price: t.price }))
    .sort((a, b) => a.above - b.above);
  return { base: v.base, tiers };
}

/**
 * Their dated prices: the last in list order whose constraint holds wins (an entry without one
 * always holds), else the first. Ours: the last in `from` order (stable) whose `from` has come
 * and whose `utc_time` holds, else the earliest. Same answers when the first is unconstrained,
 * the start dates do not go backwards, and every time-of-day price that follows a start date is
 * repeated from that date (and once undated, for the time before it).
 */
function datedPrices(list: Array<{ constraint: ConditionalPrice['constraint']; prices: ModelPrice }>, where: string): ModelPrice | DatedPrice[] {
  if (list.length === 0) throw new Error(`update-prices: ${where}: an empty price list`);
  if (list[0]!.constraint !== undefined) throw new Error(`update-prices: ${where}: the first price has a constraint; review the conversion`);
  if (list.length === 1) return list[0]!.prices;
  const out: DatedPrice[] = [{ prices: list[0]!.prices }];
  const dates: string[] = [];
  for (const { constraint: c, prices } of list.slice(1)) {
    if (c === undefined) throw new Error(`update-prices: ${where}: an unconstrained price after the first; review the conversion`);
    if (c.type === 'start_date') {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(c.start_date)) throw new Error(`update-prices: ${where}: start_date ${c.start_date} is not YYYY-MM-DD`);
      if (dates.length > 0 && c.start_date < dates[dates.length - 1]!) throw new Error(`update-prices: ${where}: start dates go backwards; review the conversion`);
      if (!dates.includes(c.start_date)) dates.push(c.start_date);
      out.push({ from: c.start_date, prices });
    } else if (c.type === 'time_of_date') {
      const utc_time = { start: utcTime(c.start_time, where), end: utcTime(c.end_time, where) };
      out.push({ utc_time, prices });
      for (const from of dates) out.push({ from, utc_time, prices });
    } else {
      throw new Error(`update-prices: ${where}: unknown constraint ${JSON.stringify(c)}`);
    }
  }
  return out;
}

/** Their time of day (`HH:MM:SS[.f]` with `Z` or `±HH:MM`) → UTC `HH:MM`. */
function utcTime(time: string, where: string): string {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):(\d{2}))$/.exec(time);
  if (m === null) throw new Error(`update-prices: ${where}: time ${time} not understood`);
  const [, h, min, s, frac, zone, sign, oh, om] = m;
  if (Number(frac ?? 0) !== 0 || Number(s) !== 0) throw new Error(`update-prices: ${where}: time ${time} has seconds; utc_time is HH:MM`);
  const offset = zone === 'Z' ? 0 : (sign === '+' ? 1 : -1) * (Number(oh) * 60 + Number(om));
  const minutes = (((Number(h) * 60 + Number(min) - offset) % 1440) + 1440) % 1440;
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

function convertRule(rule: MatchLogic, where: string): MatchRule {
  if ('or' in rule) return { or: rule.or.map((r) => convertRule(r, where)) };
  if ('and' in rule) return { and: rule.and.map((r) => convertRule(r, where)) };
  const keys = Object.keys(rule);
  if (keys.length !== 1) throw new Error(`update-prices: ${where}: match rule ${JSON.stringify(rule)} is not one rule`);
  const [key] = keys as ['equals' | 'starts_with' | 'ends_with' | 'contains' | 'regex'];
  if (!['equals', 'starts_with', 'ends_with', 'contains', 'regex'].includes(key)) throw new Error(`update-prices: ${where}: unknown match rule ${key}`);
  const value = (rule as Record<string, unknown>)[key];
  if (typeof value !== 'string' || value === '') throw new Error(`update-prices: ${where}: match rule ${key} needs a text`);
  return { [key]: value } as MatchRule;
}

/** Every regex of the lists, as `[where, pattern]`. */
export function regexesOf(data: PricingData): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const walk = (rule: MatchRule, where: string) => {
    if ('or' in rule) rule.or.forEach((r) => walk(r, where));
    else if ('and' in rule) rule.and.forEach((r) => walk(r, where));
    else if ('regex' in rule) out.push([where, rule.regex]);
  };
  for (const [list, models] of Object.entries(data.providers)) {
    for (const entry of (models as { models: ModelEntry[] }).models) if (entry.match !== undefined) walk(entry.match, `${list}/${entry.id}`);
  }
  return out;
}

/**
 * Every regex compiles in JavaScript, and means the same once lower-cased: the table matches
 * lower-cased names with the lower-cased pattern (flag `i`), so `\D`, `\S`, `\W`, `\B` or `\P{…}`
 * would silently become `\d`, `\s`… (genai-prices matches the lower-cased name with the pattern as written).
 */
export function checkRegexes(data: PricingData): void {
  for (const [where, pattern] of regexesOf(data)) {
    try {
      new RegExp(pattern);
      new RegExp(pattern.toLowerCase(), 'i');
    } catch (err) {
      throw new Error(`update-prices: ${where}: regex ${pattern} does not compile in JavaScript: ${(err as Error).message}`);
    }
    if (/\\[A-Z]/.test(pattern)) throw new Error(`update-prices: ${where}: regex ${pattern} has an upper-case escape, which the table's lower-casing would change`);
  }
}

function checkFallbacks(all: Provider[]): void {
  for (const [theirs] of LISTS) {
    const provider = all.find((p) => p.id === theirs)!;
    for (const fallback of provider.fallback_model_providers ?? []) {
      if (FALLBACKS[`${theirs}>${fallback}`] === undefined) {
        throw new Error(`update-prices: ${PACKAGE} now has "${theirs}" fall back to "${fallback}": decide whether a gateway alias should follow, and record it in FALLBACKS`);
      }
    }
  }
}

export function readOverrides(file: string = OVERRIDES_FILE): OverridesFile {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as OverridesFile;
  if (typeof raw.updated !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(raw.updated)) throw new Error(`update-prices: ${file}: "updated" must be the day it was last edited, YYYY-MM-DD`);
  if (!Array.isArray(raw.overrides)) throw new Error(`update-prices: ${file}: "overrides" must be a list`);
  const allowed = new Set(['list', 'id', 'source', 'match', 'prices', 'merge_prices', 'service_tiers']);
  for (const [i, o] of raw.overrides.entries()) {
    const where = `${file}: overrides[${i}]`;
    for (const k of Object.keys(o)) if (!allowed.has(k)) throw new Error(`${where}: unknown field "${k}" (known: ${[...allowed].join(', ')})`);
    if (typeof o.list !== 'string' || typeof o.id !== 'string' || o.id === '') throw new Error(`${where}: needs "list" and "id"`);
    if (typeof o.source !== 'string' || o.source.trim().length < 10) throw new Error(`${where} (${o.list}/${o.id}): needs a "source" saying where its numbers come from`);
    if (o.prices === undefined && o.merge_prices === undefined && o.service_tiers === undefined && o.match === undefined) throw new Error(`${where}: changes nothing`);
    if (o.prices !== undefined && o.merge_prices !== undefined) throw new Error(`${where}: "prices" replaces the prices, "merge_prices" adds to them: not both`);
  }
  return raw;
}

/**
 * Applies the overrides by model id: an entry of that id is changed in place (`match` and `prices`
 * replace, `merge_prices` adds rates or tiers to each of its prices, `service_tiers` are set); else,
 * with `prices`, a new entry goes first in the list so it wins. `merge_prices` may only add what
 * genai-prices lacks: a rate it has no value for, or tiers on a rate whose base it keeps. When
 * genai-prices catches up, the generator fails until the override is dropped.
 */
function applyOverrides(providers: Record<string, { models: ModelEntry[] }>, overrides: Override[]): string[] {
  const applied: string[] = [];
  const seen = new Set<string>();
  for (const o of overrides) {
    const where = `override ${o.list}/${o.id}`;
    if (seen.has(`${o.list}\u0000${o.id}`)) throw new Error(`update-prices: ${where}: listed twice`);
    seen.add(`${o.list}\u0000${o.id}`);
    const list = providers[o.list];
    if (list === undefined) throw new Error(`update-prices: ${where}: no list "${o.list}"`);
    const index = list.models.findIndex((m) => m.id === o.id);
    const what: string[] = [];
    let entry: ModelEntry;
    if (index === -1) {
      if (o.prices === undefined) throw new Error(`update-prices: ${where}: genai-prices has no such model, and a new entry needs "prices"`);
      entry = { id: o.id, prices: o.prices };
      list.models.unshift(entry);
      what.push('added');
    } else {
      entry = list.models[index]!;
      if (o.prices !== undefined) {
        entry.prices = o.prices;
        what.push('prices replaced');
      }
    }
    if (o.match !== undefined) {
      entry.match = o.match;
      what.push('match');
    }
    if (o.merge_prices !== undefined) {
      const prices = Array.isArray(entry.prices) ? (entry.prices as DatedPrice[]).map((d) => d.prices) : [entry.prices as ModelPrice];
      const merged = prices.map((p) => mergePrice(p, o.merge_prices!, where));
      if (Array.isArray(entry.prices)) entry.prices = (entry.prices as DatedPrice[]).map((d, i) => ({ ...d, prices: merged[i]! }));
      else entry.prices = merged[0]!;
      what.push(`adds ${Object.keys(o.merge_prices).join(', ')}`);
    }
    if (o.service_tiers !== undefined) {
      if (entry.service_tiers !== undefined) throw new Error(`update-prices: ${where}: service_tiers already set`);
      entry.service_tiers = Object.fromEntries(Object.entries(o.service_tiers).map(([tier, p]) => [tier, orderedPrice(p)]));
      what.push(`service tiers ${Object.keys(o.service_tiers).join(', ')}`);
    }
    list.models[index === -1 ? 0 : index] = ordered(entry);
    applied.push(`${o.list}/${o.id}: ${what.join('; ')}`);
  }
  return applied;
}

function mergePrice(price: ModelPrice, add: Partial<ModelPrice>, where: string): ModelPrice {
  const out: Record<string, Rate> = { ...(price as unknown as Record<string, Rate>) };
  for (const [key, rate] of Object.entries(add) as Array<[keyof ModelPrice, Rate]>) {
    const has = out[key];
    const addsTiersOnly = typeof has === 'number' && typeof rate === 'object' && rate.base === has;
    if (has !== undefined && !addsTiersOnly) {
      throw new Error(
        `update-prices: ${where}: genai-prices already has ${key} = ${JSON.stringify(has)}; the override would make it ${JSON.stringify(rate)}. ` +
          'Check the source, then drop the override (or change it to "prices" if genai-prices is wrong).',
      );
    }
    out[key] = rate;
  }
  return orderedPrice(out as unknown as ModelPrice);
}

function orderedPrice(p: ModelPrice): ModelPrice {
  const out: Record<string, unknown> = {};
  for (const k of RATE_ORDER) {
    const r: Rate | undefined = p[k];
    if (r === undefined) continue;
    out[k] = typeof r === 'number' ? r : { base: r.base, tiers: r.tiers.map((t) => ({ above: t.above, price: t.price })) };
  }
  for (const k of UNIT_ORDER) if (p[k] !== undefined) out[k] = p[k];
  for (const k of Object.keys(p)) if (!(k in out)) throw new Error(`update-prices: unknown rate "${k}"`);
  return out as unknown as ModelPrice;
}

/** The entry with its keys in a fixed order (id, match, prices, service_tiers). */
function ordered(e: ModelEntry): ModelEntry {
  const out: ModelEntry = { id: e.id } as ModelEntry;
  if (e.match !== undefined) out.match = e.match;
  out.prices = Array.isArray(e.prices)
    ? (e.prices as DatedPrice[]).map((d) => {
        const o: DatedPrice = {} as DatedPrice;
        if (d.from !== undefined) o.from = d.from;
        if (d.utc_time !== undefined) o.utc_time = { start: d.utc_time.start, end: d.utc_time.end };
        o.prices = orderedPrice(d.prices);
        return o;
      })
    : orderedPrice(e.prices as ModelPrice);
  if (e.service_tiers !== undefined) out.service_tiers = e.service_tiers;
  return out;
}

/** The file's text: two-space indented, one model per line (readable diffs). */
export function serialize(data: PricingData): string {
  const lines: string[] = ['{'];
  lines.push(`  "version": ${JSON.stringify(data.version)},`);
  lines.push(`  "currency": ${JSON.stringify(data.currency)},`);
  lines.push(`  "unit": ${JSON.stringify(data.unit)},`);
  lines.push(`  "note": ${JSON.stringify(data.note)},`);
  lines.push('  "aliases": {');
  const aliases = Object.entries(data.aliases ?? {});
  aliases.forEach(([k, v], i) => lines.push(`    ${JSON.stringify(k)}: ${JSON.stringify(v)}${i < aliases.length - 1 ? ',' : ''}`));
  lines.push('  },');
  lines.push('  "providers": {');
  const lists = Object.entries(data.providers) as Array<[string, { models: ModelEntry[] }]>;
  lists.forEach(([list, { models }], i) => {
    lines.push(`    ${JSON.stringify(list)}: {`);
    lines.push('      "models": [');
    models.forEach((m, j) => lines.push(`        ${JSON.stringify(m)}${j < models.length - 1 ? ',' : ''}`));
    lines.push('      ]');
    lines.push(`    }${i < lists.length - 1 ? ',' : ''}`);
  });
  lines.push('  }');
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const r = await generate();
  writeFileSync(PRICES_FILE, r.text);
  const total = Object.values(r.counts).reduce((a, b) => a + b, 0);
  const out = process.stdout;
  out.write(`wrote ${PRICES_FILE}: ${r.data.version}, ${total} models, ${(Buffer.byteLength(r.text) / 1024).toFixed(0)} KiB\n`);
  out.write(`  models per list: ${Object.entries(r.counts).map(([k, v]) => `${k} ${v}`).join(', ')}\n`);
  out.write(`  dropped price keys (price objects that had them; not token prices we compute with):\n`);
  for (const [k, v] of Object.entries(r.dropped).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) out.write(`    ${k.padEnd(34)} ${v}\n`);
  out.write(`  left out (no token price, so unpriced rather than free): ${r.skipped.length}\n`);
  for (const s of r.skipped) out.write(`    ${s}\n`);
  out.write(`  free (no rates in genai-prices, written as 0): ${r.zeroPriced.length}${r.zeroPriced.length > 0 ? ` (${r.zeroPriced.filter((z) => !z.startsWith('openrouter/')).join(', ')}${r.zeroPriced.some((z) => z.startsWith('openrouter/')) ? ', and openrouter :free models' : ''})` : ''}\n`);
  out.write(`  overrides applied: ${r.overridesApplied.length}\n`);
  for (const o of r.overridesApplied) out.write(`    ${o}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
