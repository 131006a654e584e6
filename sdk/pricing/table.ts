import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isoTime, type Usage } from '../../core/index.js';
// Type only: the file is read with require below (no JSON-module warning), but this import makes tsc copy it to dist/.
import type BundledPrices from './prices.json';

const require = createRequire(import.meta.url);

/**
 * A price per million tokens: a number, or a base price with tiers by the request's prompt size
 * (`{ "base": 1.25, "tiers": [{ "above": 200000, "price": 2.5 }] }`: a request whose prompt, cached
 * and written tokens included, has more than 200,000 tokens pays 2.5 for every token of this kind).
 */
export type Rate = number | { base: number; tiers: ReadonlyArray<{ above: number; price: number }> };

/**
 * Prices of one model, per million tokens, by what the provider bills. Only `input` and `output`
 * are required; a kind left out costs what the kind it belongs to costs (see each field).
 */
export interface ModelPrice {
  /** Prompt tokens neither read from nor written to the prompt cache. */
  input: Rate;
  /** Completion tokens (reasoning tokens too, unless `reasoning` is given). */
  output: Rate;
  /** Prompt tokens read from the provider's prompt cache. Default: `input`. */
  cache_read?: Rate;
  /** The older name of `cache_read` (price files written before it), read as it. */
  cached_input?: Rate;
  /** Prompt tokens written to the prompt cache for 5 minutes (Anthropic: 1.25 × input). Default: `input`. */
  cache_write?: Rate;
  /** Prompt tokens written to the prompt cache for an hour (Anthropic: 2 × input). Default: `cache_write`. */
  cache_write_1h?: Rate;
  /** Reasoning tokens, when the provider prices them apart from other output. Default: `output`. */
  reasoning?: Rate;
  /** Prompt tokens that are audio. Default: `input`. */
  input_audio?: Rate;
  /** Prompt tokens that are images. Default: `input`. */
  input_image?: Rate;
  /** Completion tokens that are audio. Default: `output`. */
  output_audio?: Rate;
  /**
   * For a model billed per image: the price of one image, by `<quality>/<size>` (`hd/1024x1792`), else by size
   * (`1024x1024`), else `*`. An image whose quality and size match none is unpriced.
   */
  per_image?: Readonly<Record<string, number>>;
  /** For a model billed by the second of audio (`whisper-1`): the price of one second. */
  per_second?: number;
  /** For a model billed by the character (`tts-1`): the price of a million characters. */
  per_million_characters?: number;
}

/** One price of a model over time: in force from a date (UTC), or at a time of day (UTC, `"16:30"` to `"00:30"`). */
export interface DatedPrice {
  /** The first day (`YYYY-MM-DD`, UTC) it applies; absent: from the start. */
  from?: string;
  /** The time of day it applies, UTC (`{ "start": "16:30", "end": "00:30" }`, which may wrap midnight); absent: all day. */
  utc_time?: { start: string; end: string };
  /** The prices that apply then. */
  prices: ModelPrice;
}

/**
 * Which model names an entry prices, case-insensitively: a name equal to, starting with, ending
 * with or containing a text, matching a regular expression, or any (`or`) or all (`and`) of rules.
 */
export type MatchRule =
  | { equals: string }
  | { starts_with: string }
  | { ends_with: string }
  | { contains: string }
  | { regex: string }
  | { or: readonly MatchRule[] }
  | { and: readonly MatchRule[] };

/** One priced model of a provider's list. */
export interface ModelEntry {
  /** The model's name in the list (what an entry's price id names). */
  id: string;
  /** The names it prices. Default: the id exactly; an entry with the id `*` and no rule prices any model of its list that no entry of any list names. */
  match?: MatchRule;
  /** Its price, or its prices over time (the last whose `from` has come and whose `utc_time` holds applies). */
  prices: ModelPrice | readonly DatedPrice[];
  /** Prices of OpenAI's service tiers (`flex`, `priority`), by the tier the answer names. A tier not listed is not priced. */
  service_tiers?: Readonly<Record<string, ModelPrice>>;
}

/**
 * The shape of `prices.json` and of a price file given to the `pricing` plugin. A provider's list is
 * `{ "models": [entries…] }`, or (the older shape) an object from model name to price, each name
 * pricing exactly that name.
 */
export interface PricingData {
  /** The list's version: its source and date (`genai-prices 0.1.8 + gateway overrides 2026-12-07`). Recorded with every priced entry. */
  version?: string;
  /** The currency of every price. Default `USD`. */
  currency?: string;
  /** What a price is per, for people (`per 1M tokens`: the only unit the table computes with). */
  unit?: string;
  /** A note for people: where the prices come from, what they leave out. */
  note?: string;
  /** A gateway provider → the lists that price its models, in order (`vertex-ai`: `google`, then `anthropic`). A provider without aliases uses its own list. */
  aliases?: Record<string, string[]>;
  /** Price list name → its models. */
  providers: Record<string, { models: ModelEntry[] } | Record<string, ModelPrice>>;
}

/** How a cost was or was not computed. */
export type CostStatus = 'priced' | 'unpriced' | 'no_usage';

/** The billed kinds of token, in the order a breakdown lists them. */
export const PRICE_COMPONENTS = ['input', 'cache_read', 'cache_write', 'cache_write_1h', 'input_audio', 'input_image', 'output', 'reasoning', 'output_audio', 'image', 'audio_second', 'character'] as const;
/** One kind of token a breakdown prices. */
export type PriceComponentName = (typeof PRICE_COMPONENTS)[number];

/**
 * One line of a cost: how many of a kind, at which rate, for how much. Tokens and characters are priced per million;
 * an `image` line per image, an `audio_second` line per second.
 */
export interface PriceComponent {
  /** The kind of token (or `image`, `audio_second`, `character`). */
  name: PriceComponentName;
  /** How many of them the usage has. */
  tokens: number;
  /** In the table's currency, the tier applied: per million tokens or characters, per image, or per second. */
  rate: number;
  /** `tokens × rate / 1e6` (per image or second: `tokens × rate`), before the multiplier. */
  amount: number;
}

/** What {@link PricingTable.price} computed: the cost and everything needed to compute it again. */
export interface CostResult {
  /** In the table's currency (USD for the bundled file), the multiplier applied; null when unpriced or without usage. */
  cost: number | null;
  /** `priced`, `unpriced` (no price for the model, or for its service tier) or `no_usage` (no token counts). */
  status: CostStatus;
}

/** A cost with the price it used, as a log entry keeps it (`GET /v1/logs/{id}`: `price`). */
export interface PriceBreakdown extends CostResult {
  /** The table's version. */
  version: string | null;
  /** The currency. */
  currency: string;
  /** The entry that priced it, `<list>/<model id>` (`anthropic/claude-sonnet-4-5`); null when none did. */
  price_id: string | null;
  /** The prompt-size tier applied: the `above` threshold passed, or null for the base prices. */
  tier_above: number | null;
  /** The service tier priced (`flex`, `priority`), or null for the standard prices. */
  service_tier: string | null;
  /** The day (and time, for a time-of-day price) the prices in force were chosen for, ISO 8601. */
  priced_at: string | null;
  /** The pricing multiplier of the target (an integration's adjustment), 1 when none. */
  multiplier: number;
  /** The lines: every kind of token the usage has, with its rate and amount. */
  components: PriceComponent[];
  /** Why a request is unpriced, for people (`no price for model "x" at provider "y"`); absent when priced. */
  reason?: string;
  /**
   * A stream continued by another call (stream recovery): each call's own price, with its `provider` and `model`;
   * `cost` is their sum. Absent otherwise.
   */
  segments?: Array<PriceBreakdown & { provider: string | null; model: string | null }>;
}

/** Options of one pricing. */
export interface PriceOptions {
  /** When the request ran (epoch ms): the price in force then applies. Default: now. */
  at?: number;
  /** The pricing multiplier (an integration's `pricing_adjustments.multiplier`). Default 1. */
  multiplier?: number;
  /** The service tier the answer names (`flex`, `priority`); `default`, `auto`, `standard` or null: standard prices. */
  serviceTier?: string | null;
}

/** A model's entry found in a list. */
interface Found {
  list: string;
  entry: CompiledEntry;
  /** `<list>/<entry id>`, made once with the lookup it is memoised with. */
  priceId: string;
}

interface CompiledEntry {
  id: string;
  test: (name: string) => boolean;
  prices: ReadonlyArray<{ from: number; window: [number, number] | null; prices: ModelPrice }>;
  serviceTiers: ReadonlyMap<string, ModelPrice> | null;
  /** A list's `*`: prices any model of its list, but only once no entry of any list names the model. */
  any: boolean;
}

const REGION_PREFIX = /^(?:us|eu|apac|jp|au|ca|global|us-gov)\./;
const VENDOR_PREFIX = /^(?:anthropic|meta|mistral|cohere|amazon|ai21|deepseek|openai|qwen|writer)\./;
/** A Bedrock model version suffix (`-v1:0`, `-v2`). */
const BEDROCK_VERSION = /-v\d+(?::\d+)?$/;
/** The one rule that maps an id to another: a trailing date (`-2024-08-06`, `-20241022`, `@20240620`) names the model without it. */
const DATE_SUFFIX = /[-@](?:\d{4}-\d{2}-\d{2}|\d{8})$/;
/** Tiers that mean the standard prices: OpenAI's `default` and `auto`, Groq's `on_demand`. */
const STANDARD_TIERS = new Set(['default', 'auto', 'standard', 'on_demand', '']);
const MEMO_LIMIT = 5000;
const DAY = 86_400_000;

/**
 * A price list with lookup by provider and model. A model is priced only by an entry whose rule
 * matches its name (no entry stands in for another by a shared prefix): its name as given, else
 * without a `models/`-style path, else without a Bedrock region, vendor and version (`us.anthropic.…-v1:0`),
 * else without a trailing date. Lookups are memoised (bounded).
 */
export class PricingTable {
  /** The list's `version`; null when the file names none. */
  readonly version: string | null;
  /** The currency of its prices and costs (`USD` unless the file says otherwise). */
  readonly currency: string;
  readonly #lists = new Map<string, CompiledEntry[]>();
  readonly #aliases = new Map<string, string[]>();
  readonly #memo = new Map<string, Found | null>();

  /** Builds the table from a price list; throws naming the entry when a price or a rule is not valid. */
  constructor(data: PricingData) {
    this.version = data.version ?? null;
    this.currency = data.currency ?? 'USD';
    for (const [list, models] of Object.entries(data.providers)) this.#lists.set(list, compileList(list, models));
    for (const [provider, others] of Object.entries(data.aliases ?? {})) this.#aliases.set(provider, others);
  }

  /** Priced models, for diagnostics. */
  get size(): number {
    let n = 0;
    for (const m of this.#lists.values()) n += m.length;
    return n;
  }

  /** The entry pricing `model` at `provider` (see the class), memoised; null when none does. */
  #entry(provider: string, model: string): Found | null {
    const key = `${provider}\u0000${model}`;
    const memo = this.#memo.get(key);
    if (memo !== undefined) return memo;
    const found = this.#find([provider, ...(this.#aliases.get(provider) ?? [])], model.toLowerCase(), true);
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(key, found);
    return found;
  }

  /** The first entry whose rule names the model (each name tried against every list); then, with `any`, a list's `*`. */
  #find(lists: readonly string[], model: string, any: boolean): Found | null {
    for (const name of candidates(model)) {
      for (const list of lists) {
        const entries = this.#lists.get(list);
        if (entries === undefined) continue;
        for (const entry of entries) if (!entry.any && entry.test(name)) return { list, entry, priceId: `${list}/${entry.id}` };
      }
    }
    if (any) {
      for (const list of lists) {
        const entry = this.#lists.get(list)?.find((e) => e.any);
        if (entry !== undefined) return { list, entry, priceId: `${list}/${entry.id}` };
      }
    }
    return null;
  }

  /**
   * The prices of `model` at `provider` in force at `at` (epoch ms, default now), or null when the
   * list prices no such model. Tiers and service tiers are left to {@link price}.
   */
  lookup(provider: string | null, model: string | null, at: number = Date.now()): ModelPrice | null {
    if (provider === null || model === null || model === '') return null;
    const found = this.#entry(provider, model);
    return found === null ? null : inForce(found.entry, at);
  }

  /**
   * The prices of `model` under whichever list knows it (the lists in the file's order), for when
   * the provider is not known yet (a `@slug` resolved later). Null when none does.
   */
  lookupModel(model: string | null, at: number = Date.now()): ModelPrice | null {
    if (model === null || model === '') return null;
    const key = `\u0001${model}`;
    let found = this.#memo.get(key);
    if (found === undefined) {
      // A list's `*` prices its own provider's unknown models, not a model whose provider is not known.
      found = this.#find([...this.#lists.keys()], model.toLowerCase(), false);
      if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
      this.#memo.set(key, found);
    }
    return found === null ? null : inForce(found.entry, at);
  }

  /** Cost of one request (see {@link price}), without the breakdown. */
  cost(provider: string | null, model: string | null, usage: Usage | null, multiplier = 1): CostResult {
    const { cost, status } = this.price(provider, model, usage, { multiplier });
    return { cost, status };
  }

  /**
   * Cost of one request and the price it used: each kind of token the usage has (input, cache
   * reads, 5-minute and 1-hour cache writes, audio and image input, output, reasoning, audio output)
   * at its rate, in the prompt-size tier the prompt reaches, at the service tier the answer names,
   * with the prices in force when the request ran; the sum times the multiplier.
   */
  price(provider: string | null, model: string | null, usage: Usage | null, options: PriceOptions = {}): PriceBreakdown {
    const at = options.at ?? Date.now();
    const multiplier = options.multiplier ?? 1;
    const tier = options.serviceTier ?? null;
    if (usage === null) return this.#breakdown(null, 'no_usage', null, multiplier, null, null, null, [], undefined);
    const found = provider === null || model === null || model === '' ? null : this.#entry(provider, model);
    if (found === null) {
      return this.#breakdown(null, 'unpriced', null, multiplier, null, null, null, [], `no price for model "${String(model).slice(0, 128)}" at provider "${String(provider).slice(0, 64)}"`);
    }
    const priceId = found.priceId;
    let prices = inForce(found.entry, at);
    const standard = tier === null || STANDARD_TIERS.has(tier);
    if (!standard) {
      const special = found.entry.serviceTiers?.get(tier);
      if (special === undefined) return this.#breakdown(null, 'unpriced', priceId, multiplier, tier, null, null, [], `no "${tier.slice(0, 32)}" service tier price for ${priceId}`);
      prices = special;
    }
    const missing = unitsUnpriced(prices, usage);
    if (missing !== null) return this.#breakdown(null, 'unpriced', priceId, multiplier, standard ? null : tier, null, null, [], `no price for ${missing} in ${priceId}`);
    const { components, tierAbove } = componentsOf(prices, usage);
    let sum = 0;
    for (const c of components) sum += c.amount;
    return this.#breakdown(sum * multiplier, 'priced', priceId, multiplier, standard ? null : tier, tierAbove, isoTime(at), components, undefined);
  }

  /** A breakdown, always built with the same fields in the same order (one hidden class: no spread of one object into another). */
  #breakdown(
    cost: number | null,
    status: CostStatus,
    priceId: string | null,
    multiplier: number,
    serviceTier: string | null,
    tierAbove: number | null,
    pricedAt: string | null,
    components: PriceComponent[],
    reason: string | undefined,
  ): PriceBreakdown {
    const out: PriceBreakdown = {
      cost,
      status,
      version: this.version,
      currency: this.currency,
      price_id: priceId,
      tier_above: tierAbove,
      service_tier: serviceTier,
      priced_at: pricedAt,
      multiplier,
      components,
    };
    if (reason !== undefined) out.reason = reason;
    return out;
  }
}

/**
 * The cost formula on its own, at the base tier's prices or the tier the prompt reaches (see
 * `PricingTable.price`): every kind of token at its rate, summed, times the multiplier.
 */
export function costOf(price: ModelPrice, usage: Usage, multiplier = 1): number {
  let sum = 0;
  for (const c of componentsOf(price, usage).components) sum += c.amount;
  return sum * multiplier;
}

/**
 * The lines of a cost. The prompt is split into cache reads, 5-minute and 1-hour cache writes,
 * audio, images and the rest (input); the completion into reasoning, audio and the rest (output).
 * Each count is capped by what is left of its whole, so inconsistent counts never price a token twice.
 */
export function componentsOf(price: ModelPrice, usage: Usage): { components: PriceComponent[]; tierAbove: number | null } {
  // Every request priced runs this: plain locals and one push per line, no list of tuples and no closures (which came
  // to about 2 KB of garbage a request).
  const prompt = Math.max(0, usage.prompt_tokens);
  const completion = Math.max(0, usage.completion_tokens);
  let left = prompt;
  const cacheRead = Math.min(Math.max(0, usage.cached_tokens ?? 0), left);
  left -= cacheRead;
  const written = Math.min(Math.max(0, usage.cache_write_tokens ?? 0), left);
  left -= written;
  const written1h = Math.min(Math.max(0, usage.cache_write_1h_tokens ?? 0), written);
  const audioIn = Math.min(Math.max(0, usage.input_audio_tokens ?? 0), left);
  left -= audioIn;
  const imageIn = Math.min(Math.max(0, usage.input_image_tokens ?? 0), left);
  left -= imageIn;
  const input = left;
  left = completion;
  const reasoning = Math.min(Math.max(0, usage.reasoning_tokens ?? 0), left);
  left -= reasoning;
  const audioOut = Math.min(Math.max(0, usage.output_audio_tokens ?? 0), left);
  left -= audioOut;
  const output = left;

  const tierAbove = tierOf(price, prompt);
  const inputRate = rateOr(price.input, tierAbove, 0);
  const outputRate = rateOr(price.output, tierAbove, 0);
  const writeRate = rateOr(price.cache_write, tierAbove, inputRate);
  const components: PriceComponent[] = [];
  // The input and output lines always show (a zero is a fact); the others only when the usage has them.
  line(components, 'input', input, inputRate);
  if (cacheRead !== 0) line(components, 'cache_read', cacheRead, rateOr(price.cache_read ?? price.cached_input, tierAbove, inputRate));
  if (written - written1h !== 0) line(components, 'cache_write', written - written1h, writeRate);
  if (written1h !== 0) line(components, 'cache_write_1h', written1h, rateOr(price.cache_write_1h, tierAbove, writeRate));
  if (audioIn !== 0) line(components, 'input_audio', audioIn, rateOr(price.input_audio, tierAbove, inputRate));
  if (imageIn !== 0) line(components, 'input_image', imageIn, rateOr(price.input_image, tierAbove, inputRate));
  line(components, 'output', output, outputRate);
  if (reasoning !== 0) line(components, 'reasoning', reasoning, rateOr(price.reasoning, tierAbove, outputRate));
  if (audioOut !== 0) line(components, 'output_audio', audioOut, rateOr(price.output_audio, tierAbove, outputRate));
  // What some media models bill instead of tokens (unitsUnpriced says when one has no rate here).
  const image = imageRate(price, usage);
  if (image !== null) components.push({ name: 'image', tokens: usage.images!, rate: image, amount: usage.images! * image });
  if ((usage.audio_seconds ?? 0) > 0 && price.per_second !== undefined) components.push({ name: 'audio_second', tokens: usage.audio_seconds!, rate: price.per_second, amount: usage.audio_seconds! * price.per_second });
  if ((usage.characters ?? 0) > 0 && price.per_million_characters !== undefined) {
    components.push({ name: 'character', tokens: usage.characters!, rate: price.per_million_characters, amount: (usage.characters! * price.per_million_characters) / 1e6 });
  }
  return { components, tierAbove };
}

/** The price of one image of the usage's quality and size, or null (no images, or no rate for them). */
function imageRate(price: ModelPrice, usage: Usage): number | null {
  if ((usage.images ?? 0) <= 0 || price.per_image === undefined) return null;
  const size = usage.image_size ?? '';
  return price.per_image[`${usage.image_quality ?? 'standard'}/${size}`] ?? price.per_image[size] ?? price.per_image['*'] ?? null;
}

/** What the usage counts in units (images, seconds, characters) that this price has no rate for; null when none. */
export function unitsUnpriced(price: ModelPrice, usage: Usage): string | null {
  const images = (usage.images ?? 0) > 0;
  const seconds = (usage.audio_seconds ?? 0) > 0;
  const characters = (usage.characters ?? 0) > 0;
  if (images && imageRate(price, usage) === null) return `${usage.image_quality ?? 'standard'} ${usage.image_size ?? ''} images`.trim();
  if (seconds && price.per_second === undefined) return 'seconds of audio';
  if (characters && price.per_million_characters === undefined) return 'characters';
  // A model billed in units that the usage does not count (tokens only): priced at its zero token rates it would look free.
  if (price.per_image !== undefined && !images) return 'images (the usage counts none)';
  if (price.per_second !== undefined && !seconds) return 'seconds of audio (the usage counts none)';
  if (price.per_million_characters !== undefined && !characters) return 'characters (the usage counts none)';
  return null;
}

/** The highest tier threshold any rate of `price` has that `prompt` passes, or null for the base prices. */
function tierOf(price: ModelPrice, prompt: number): number | null {
  let best: number | null = null;
  for (const key of RATE_FIELDS) {
    const r = price[key];
    if (typeof r !== 'object' || r === null) continue;
    for (const t of r.tiers) if (prompt > t.above && (best === null || t.above > best)) best = t.above;
  }
  return best;
}

/** Adds a line to a breakdown: `tokens` at `rate` per million. */
function line(components: PriceComponent[], name: PriceComponentName, tokens: number, rate: number): void {
  components.push({ name, tokens, rate, amount: (tokens * rate) / 1e6 });
}

/** A rate at a tier, or `fallback` when the price has none. */
function rateOr(r: Rate | undefined, above: number | null, fallback: number): number {
  return r === undefined ? fallback : rateAt(r, above);
}

/** A rate at a tier: the price of the highest tier at or below `above` that the rate lists, else its base. */
function rateAt(r: Rate, above: number | null): number {
  if (typeof r === 'number') return r;
  if (above === null) return r.base;
  let price = r.base;
  let reached = -1;
  for (const t of r.tiers) if (t.above <= above && t.above > reached) ((price = t.price), (reached = t.above));
  return price;
}

/** The prices of an entry in force at `at`: the last dated price whose day has come and whose time of day holds. */
function inForce(entry: CompiledEntry, at: number): ModelPrice {
  const minute = Math.floor((at % DAY) / 60_000);
  let chosen = entry.prices[0]!.prices;
  for (const p of entry.prices) {
    if (p.from > at) continue;
    if (p.window !== null) {
      const [start, end] = p.window;
      const inside = start <= end ? minute >= start && minute < end : minute >= start || minute < end;
      if (!inside) continue;
    }
    chosen = p.prices;
  }
  return chosen;
}

/** The names a model is looked up under, in order (see {@link PricingTable}). */
export function candidates(model: string): string[] {
  const out = [model];
  const add = (name: string) => {
    if (name !== '' && !out.includes(name)) out.push(name);
  };
  const slash = model.lastIndexOf('/');
  const bare = slash === -1 ? model : model.slice(slash + 1);
  add(bare);
  add(bare.replace(REGION_PREFIX, '').replace(VENDOR_PREFIX, '').replace(BEDROCK_VERSION, ''));
  for (const name of [...out]) add(name.replace(DATE_SUFFIX, ''));
  return out;
}

/** The entry of the longest listed name `name` starts with, followed by `-`, `@`, `:`, `.` or `_` (the context window table's lookup; prices never match this way). */
export function longestPrefix<T>(models: Map<string, T>, name: string): T | null {
  let best: T | null = null;
  let bestLength = 0;
  for (const [listed, value] of models) {
    if (listed.length > bestLength && name.length > listed.length && name.startsWith(listed) && PREFIX_SEPARATORS.has(name[listed.length]!)) {
      best = value;
      bestLength = listed.length;
    }
  }
  return best;
}
const PREFIX_SEPARATORS = new Set(['-', '@', ':', '.', '_']);

/**
 * A list's entries, whichever shape it has: `{ models: [...] }` as it is; the older shape (a name
 * → its price) as one entry per name pricing exactly that name, with `*` (a price for every model
 * of the list, as a local server's `"*": { "input": 0, "output": 0 }`) last.
 */
export function entriesOf(models: PricingData['providers'][string]): ModelEntry[] {
  if (models !== null && typeof models === 'object' && Array.isArray((models as { models?: unknown }).models)) return [...(models as { models: ModelEntry[] }).models];
  const named = Object.entries((models ?? {}) as Record<string, ModelPrice>);
  const out: ModelEntry[] = named.filter(([name]) => name !== '*').map(([name, price]) => ({ id: name.toLowerCase(), prices: price }));
  const any = named.find(([name]) => name === '*');
  if (any !== undefined) out.push({ id: '*', prices: any[1] });
  return out;
}

function compileList(list: string, models: PricingData['providers'][string]): CompiledEntry[] {
  return entriesOf(models).map((entry, i) => compileEntry(list, entry, i));
}

function compileEntry(list: string, entry: ModelEntry, i: number): CompiledEntry {
  const where = `pricing: ${list} / ${typeof entry?.id === 'string' ? entry.id : `model ${i}`}`;
  if (entry === null || typeof entry !== 'object' || typeof entry.id !== 'string' || entry.id === '') throw new Error(`${where}: an entry needs an "id"`);
  // `*` without a rule: any model of the list, once no entry names it (see #find).
  const any = entry.id === '*' && entry.match === undefined;
  const test = any ? () => true : compileRule(entry.match ?? { equals: entry.id }, where);
  const dated: DatedPrice[] = Array.isArray(entry.prices) ? [...(entry.prices as DatedPrice[])] : [{ prices: entry.prices as ModelPrice }];
  if (dated.length === 0) throw new Error(`${where}: "prices" lists no price`);
  const prices = dated.map((p, k) => {
    const at = Array.isArray(entry.prices) ? `${where}: prices[${k}]` : where;
    const from = p.from === undefined ? -Infinity : Date.parse(`${p.from}T00:00:00Z`);
    if (Number.isNaN(from)) throw new Error(`${at}: "from" must be a day, YYYY-MM-DD`);
    const window = p.utc_time === undefined ? null : ([minutesOf(p.utc_time.start, at), minutesOf(p.utc_time.end, at)] as [number, number]);
    return { from, window, prices: checkPrice(p.prices, at) };
  });
  // Kept in time order: the last in force wins.
  prices.sort((a, b) => a.from - b.from);
  // A Map: a tier name an answer gives is looked up among these only (never `constructor` or `__proto__` of an object).
  let serviceTiers: Map<string, ModelPrice> | null = null;
  if (entry.service_tiers !== undefined) {
    serviceTiers = new Map();
    for (const [tier, price] of Object.entries(entry.service_tiers)) serviceTiers.set(tier, checkPrice(price, `${where}: service_tiers.${tier}`));
  }
  return { id: entry.id, test, prices, serviceTiers, any };
}

function minutesOf(time: string, where: string): number {
  const m = /^(\d{2}):(\d{2})$/.exec(time);
  if (m === null || Number(m[1]) > 23 || Number(m[2]) > 59) throw new Error(`${where}: utc_time must be HH:MM`);
  return Number(m[1]) * 60 + Number(m[2]);
}

function compileRule(rule: MatchRule, where: string): (name: string) => boolean {
  if (rule === null || typeof rule !== 'object') throw new Error(`${where}: "match" must be a rule object`);
  const text = (v: unknown) => {
    if (typeof v !== 'string' || v === '') throw new Error(`${where}: a match rule needs a text`);
    return v.toLowerCase();
  };
  if ('equals' in rule) {
    const v = text(rule.equals);
    return (n) => n === v;
  }
  if ('starts_with' in rule) {
    const v = text(rule.starts_with);
    return (n) => n.startsWith(v);
  }
  if ('ends_with' in rule) {
    const v = text(rule.ends_with);
    return (n) => n.endsWith(v);
  }
  if ('contains' in rule) {
    const v = text(rule.contains);
    return (n) => n.includes(v);
  }
  if ('regex' in rule) {
    let re: RegExp;
    try {
      // As written, case-insensitive by the flag (lower-casing the text would turn `\D` into `\d`).
      if (typeof rule.regex !== 'string' || rule.regex === '') throw new Error('a match rule needs a text');
      re = new RegExp(rule.regex, 'i');
    } catch (err) {
      throw new Error(`${where}: match regex: ${(err as Error).message}`);
    }
    return (n) => re.test(n);
  }
  if ('or' in rule && Array.isArray(rule.or)) {
    const tests = rule.or.map((r) => compileRule(r, where));
    return (n) => tests.some((t) => t(n));
  }
  if ('and' in rule && Array.isArray(rule.and)) {
    const tests = rule.and.map((r) => compileRule(r, where));
    return (n) => tests.every((t) => t(n));
  }
  throw new Error(`${where}: unknown match rule ${JSON.stringify(rule).slice(0, 80)}`);
}

const RATE_FIELDS = ['input', 'output', 'cache_read', 'cached_input', 'cache_write', 'cache_write_1h', 'reasoning', 'input_audio', 'input_image', 'output_audio'] as const;
/** Rates of media models' own units: not per million tokens, and never tiered. */
const UNIT_FIELDS = ['per_image', 'per_second', 'per_million_characters'] as const;
const KNOWN_FIELDS: readonly string[] = [...RATE_FIELDS, ...UNIT_FIELDS];

function checkPrice(price: ModelPrice, where: string): ModelPrice {
  if (price === null || typeof price !== 'object') throw new Error(`${where}: a price must be an object of rates per million tokens`);
  for (const key of Object.keys(price)) if (!KNOWN_FIELDS.includes(key)) throw new Error(`${where}: unknown rate "${key}" (known: ${KNOWN_FIELDS.join(', ')})`);
  const amount = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  for (const field of ['per_second', 'per_million_characters'] as const) {
    if (price[field] !== undefined && !amount(price[field])) throw new Error(`${where}: ${field} must be a number of at least 0`);
  }
  if (price.per_image !== undefined) {
    if (price.per_image === null || typeof price.per_image !== 'object' || Object.values(price.per_image).some((v) => !amount(v))) {
      throw new Error(`${where}: per_image must map "<quality>/<size>", "<size>" or "*" to a price of at least 0`);
    }
  }
  for (const field of RATE_FIELDS) {
    const r = price[field];
    if (r === undefined) {
      if (field === 'input' || field === 'output') throw new Error(`${where}: ${field} is required (per million tokens)`);
      continue;
    }
    if (typeof r === 'number') {
      if (!Number.isFinite(r) || r < 0) throw new Error(`${where}: ${field} must be a number of at least 0 (per million tokens)`);
      continue;
    }
    if (r === null || typeof r !== 'object' || typeof r.base !== 'number' || !Number.isFinite(r.base) || r.base < 0 || !Array.isArray(r.tiers)) {
      throw new Error(`${where}: ${field} must be a number or { base, tiers: [{ above, price }] }`);
    }
    for (const t of r.tiers) {
      if (t === null || typeof t !== 'object' || !Number.isInteger(t.above) || t.above < 0 || typeof t.price !== 'number' || !Number.isFinite(t.price) || t.price < 0) {
        throw new Error(`${where}: ${field}.tiers: each is { above: a whole number of prompt tokens, price: at least 0 }`);
      }
    }
  }
  return Object.freeze({ ...price });
}

/** `make`, called on the first call only: the bundled tables are built when first asked for, then kept. */
export function builtOnce<T>(make: () => T): () => T {
  let built: T | undefined;
  return () => (built ??= make());
}

/** The data of the price list shipped with the gateway (`sdk/pricing/prices.json`). */
export function bundledPricingData(): PricingData {
  return require('./prices.json') as typeof BundledPrices as PricingData;
}

/** The price list shipped with the gateway, built once. */
export const bundledPricing: () => PricingTable = builtOnce(() => new PricingTable(bundledPricingData()));

/** Reads a price file of the bundled file's shape. */
export function readPricingData(file: string): PricingData {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`pricing: cannot read ${file}: ${(err as Error).message}`);
  }
  if (data === null || typeof data !== 'object' || typeof (data as PricingData).providers !== 'object' || (data as PricingData).providers === null) {
    throw new Error(`pricing: ${file} must be a JSON object with a "providers" object`);
  }
  return data as PricingData;
}
