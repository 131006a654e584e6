import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Usage } from '../../core/index.js';
// Type only: the file is read with require below (no JSON-module warning), but this import makes tsc copy it to dist/.
import type BundledPrices from './prices.json';

const require = createRequire(import.meta.url);

/** Prices of one model, in the file's currency per million tokens. */
export interface ModelPrice {
  /** Prompt tokens that were not served from the provider's prompt cache. */
  input: number;
  /** Completion tokens (reasoning tokens too, unless `reasoning` is given). */
  output: number;
  /** Prompt tokens read from the provider's prompt cache. Default: `input`. */
  cached_input?: number;
  /** Reasoning tokens, when the provider prices them apart from other output. Default: `output`. */
  reasoning?: number;
}

/** The shape of `prices.json` (and of a replacement file given to the `pricing` plugin). */
export interface PricingData {
  /** The list's version, e.g. the date it was checked (`2025-11-01`). */
  version?: string;
  /** The currency of every price. Default `USD`. */
  currency?: string;
  /** What a price is per, for people (`per 1M tokens`: the only unit the table computes with). */
  unit?: string;
  /** A note for people: where the prices come from, what they leave out. */
  note?: string;
  /** Provider name → other providers whose price lists also apply (vertex-ai serves google and anthropic models). */
  aliases?: Record<string, string[]>;
  /** Provider name → model name (lower case; a prefix of dated or suffixed names; `*` for any model) → price. */
  providers: Record<string, Record<string, ModelPrice>>;
}

/** How a cost was or was not computed. */
export type CostStatus = 'priced' | 'unpriced' | 'no_usage';

/** What {@link costOf} computed: a cost, and whether it could be computed. */
export interface CostResult {
  /** In the table's currency (USD for the bundled file); null when unpriced or without usage. */
  cost: number | null;
  /** `priced`, `unpriced` (no price for the model) or `no_usage` (no token counts). */
  status: CostStatus;
}

/** Separators after which a longer model name still counts as a version of a listed one (`gpt-4o-2024-08-06`, `claude-3-5-sonnet@20240620`). */
const SEPARATORS = new Set(['-', '@', ':', '.', '_']);
const REGION_PREFIX = /^(?:us|eu|apac|global|us-gov)\./;
const VENDOR_PREFIX = /^(?:anthropic|meta|mistral|cohere|amazon|ai21|deepseek|openai)\./;
const MEMO_LIMIT = 5000;

/** A price list with lookup by provider and model; lookups are memoised (bounded). */
export class PricingTable {
  /** The list's `version`; null when the file names none. */
  readonly version: string | null;
  /** The currency of its prices and costs (`USD` unless the file says otherwise). */
  readonly currency: string;
  readonly #providers = new Map<string, Map<string, ModelPrice>>();
  readonly #aliases = new Map<string, string[]>();
  readonly #memo = new Map<string, ModelPrice | null>();

  /** Builds the table from a price list; throws when a price is not a non-negative number. */
  constructor(data: PricingData) {
    this.version = data.version ?? null;
    this.currency = data.currency ?? 'USD';
    for (const [provider, models] of Object.entries(data.providers)) {
      const map = new Map<string, ModelPrice>();
      for (const [model, price] of Object.entries(models)) map.set(model.toLowerCase(), checkPrice(provider, model, price));
      this.#providers.set(provider, map);
    }
    for (const [provider, others] of Object.entries(data.aliases ?? {})) this.#aliases.set(provider, others);
  }

  /** Providers and model counts, for diagnostics. */
  get size(): number {
    let n = 0;
    for (const m of this.#providers.values()) n += m.size;
    return n;
  }

  /**
   * The price of `model` at `provider`: an exact name, else the longest listed
   * name the model starts with followed by a separator (`-`, `@`, `:`, `.`,
   * `_`), else the provider's `*` entry; tried on the name as given, without
   * a `models/`-style path, and without a Bedrock region and vendor prefix;
   * in the provider's list, then in its aliases' lists. Null when unknown.
   */
  lookup(provider: string | null, model: string | null): ModelPrice | null {
    if (provider === null || model === null || model === '') return null;
    const key = `${provider}\u0000${model}`;
    const memo = this.#memo.get(key);
    if (memo !== undefined) return memo;
    const found = this.#find(provider, model.toLowerCase());
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(key, found);
    return found;
  }

  /**
   * The price of `model` under whichever provider's list knows it (the providers in the file's
   * order), for when the provider is not known yet (a `@slug` resolved later). Null when none does.
   */
  lookupModel(model: string | null): ModelPrice | null {
    if (model === null || model === '') return null;
    const key = `\u0001${model}`;
    const memo = this.#memo.get(key);
    if (memo !== undefined) return memo;
    let found: ModelPrice | null = null;
    for (const provider of this.#providers.keys()) {
      // A provider's `*` entry prices its own unknown models, not every other provider's.
      found = this.#find(provider, model.toLowerCase(), false);
      if (found !== null) break;
    }
    if (this.#memo.size >= MEMO_LIMIT) this.#memo.clear();
    this.#memo.set(key, found);
    return found;
  }

  #find(provider: string, model: string, wildcard = true): ModelPrice | null {
    const names = candidates(model);
    const lists = [provider, ...(this.#aliases.get(provider) ?? [])];
    for (const list of lists) {
      const models = this.#providers.get(list);
      if (models === undefined) continue;
      for (const name of names) {
        const exact = models.get(name);
        if (exact !== undefined) return exact;
      }
      for (const name of names) {
        const prefix = longestPrefix(models, name);
        if (prefix !== null) return prefix;
      }
      const any = wildcard ? models.get('*') : undefined;
      if (any !== undefined) return any;
    }
    return null;
  }

  /**
   * Cost of one request:
   * ((prompt − cached) × input + cached × cached_input + (completion − reasoning) × output + reasoning × reasoning) / 1e6 × multiplier,
   * where cached_input defaults to input and reasoning to output (so reasoning tokens, already part of the
   * completion count, are priced as output unless the model lists a reasoning price).
   */
  cost(provider: string | null, model: string | null, usage: Usage | null, multiplier = 1): CostResult {
    if (usage === null) return { cost: null, status: 'no_usage' };
    const price = this.lookup(provider, model);
    if (price === null) return { cost: null, status: 'unpriced' };
    return { cost: costOf(price, usage, multiplier), status: 'priced' };
  }
}

/** The cost formula on its own (see `PricingTable.cost`). */
export function costOf(price: ModelPrice, usage: Usage, multiplier = 1): number {
  const prompt = usage.prompt_tokens;
  const cached = Math.min(usage.cached_tokens ?? 0, prompt);
  const completion = usage.completion_tokens;
  const reasoning = price.reasoning === undefined ? 0 : Math.min(usage.reasoning_tokens ?? 0, completion);
  const sum =
    (prompt - cached) * price.input +
    cached * (price.cached_input ?? price.input) +
    (completion - reasoning) * price.output +
    reasoning * (price.reasoning ?? price.output);
  return (sum / 1e6) * multiplier;
}

/** The names a model is looked up under: as given, without a `models/`-style path, without a Bedrock region and vendor prefix. */
export function candidates(model: string): string[] {
  const out = [model];
  const slash = model.lastIndexOf('/');
  if (slash !== -1) out.push(model.slice(slash + 1));
  const bare = model.replace(REGION_PREFIX, '').replace(VENDOR_PREFIX, '');
  if (bare !== model) out.push(bare);
  return out;
}

/** The entry of the longest listed name `name` starts with, followed by a separator (a dated or suffixed version of it). */
export function longestPrefix<T>(models: Map<string, T>, name: string): T | null {
  let best: T | null = null;
  let bestLength = 0;
  for (const [listed, price] of models) {
    if (listed.length > bestLength && name.length > listed.length && name.startsWith(listed) && SEPARATORS.has(name[listed.length]!)) {
      best = price;
      bestLength = listed.length;
    }
  }
  return best;
}

function checkPrice(provider: string, model: string, price: ModelPrice): ModelPrice {
  for (const field of ['input', 'output', 'cached_input', 'reasoning'] as const) {
    const value = price[field];
    if (value === undefined && (field === 'cached_input' || field === 'reasoning')) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new Error(`pricing: ${provider} / ${model}: ${field} must be a number of at least 0 (per million tokens)`);
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
