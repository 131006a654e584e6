import * as v from 'valibot';
import { bundledPricing, bundledPricingData, entriesOf, type GatewayPlugin, type ModelEntry, parseOptions, PRICING, type PricingData, PricingTable, readPricingData } from '../../sdk/index.js';

export const PLUGIN_NAME = 'pricing';

const amount = v.pipe(v.number(), v.minValue(0, 'must be at least 0 (per million tokens)'));
const RateSchema = v.union(
  [amount, v.strictObject({ base: amount, tiers: v.array(v.strictObject({ above: v.pipe(v.number(), v.integer(), v.minValue(0)), price: amount })) })],
  'must be a price per million tokens, or { base, tiers: [{ above, price }] }',
);
const PriceSchema = v.strictObject({
  input: RateSchema,
  output: RateSchema,
  cache_read: v.optional(RateSchema),
  cached_input: v.optional(RateSchema),
  cache_write: v.optional(RateSchema),
  cache_write_1h: v.optional(RateSchema),
  reasoning: v.optional(RateSchema),
  input_audio: v.optional(RateSchema),
  input_image: v.optional(RateSchema),
  output_audio: v.optional(RateSchema),
});

const OptionsSchema = v.strictObject({
  /** A price file of the bundled file's shape that replaces it (docs/cost.md, "Price files"). */
  file: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Prices laid over the list (bundled or `file`): list → model name → price per million tokens; each name prices exactly that name (`*`: every model of the list). */
  prices: v.optional(v.record(v.string(), v.record(v.string(), PriceSchema))),
});

export type PricingOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The price list used for request costs: the bundled `prices.json` (generated from
 * `@pydantic/genai-prices` with the gateway's overrides), or a replacement `file`, with `prices`
 * laid over it (a model named there wins over the list's entries), offered under the SDK's
 * `PRICING` token. Checked when the gateway starts: a bad entry stops it, naming the entry.
 * Without this plugin the bundled list applies (`pricingOf(api)` in the SDK picks).
 */
export function pricing(options: PricingOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  let table: PricingTable;
  if (opts.file === undefined && opts.prices === undefined) {
    table = bundledPricing();
  } else {
    const data: PricingData = opts.file !== undefined ? readPricingData(opts.file) : bundledPricingData();
    const providers: PricingData['providers'] = { ...data.providers };
    for (const [list, models] of Object.entries(opts.prices ?? {})) {
      const own = entriesOf(models as PricingData['providers'][string]);
      providers[list] = { models: [...own, ...(data.providers[list] === undefined ? [] : entriesOf(data.providers[list]!))] as ModelEntry[] };
    }
    const version = opts.prices === undefined ? data.version : `${data.version ?? 'unversioned'} + the pricing plugin's prices`;
    table = new PricingTable({ ...data, ...(version === undefined ? {} : { version }), providers });
  }
  return {
    name: PLUGIN_NAME,
    provides: [PRICING],
    state: [],
    apply(api) {
      api.provide(PRICING, table);
    },
  };
}

export default pricing;
