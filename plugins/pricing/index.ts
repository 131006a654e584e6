import * as v from 'valibot';
import {
  bundledPricing,
  bundledPricingData,
  type GatewayPlugin,
  parseOptions,
  PRICING,
  type PricingData,
  PricingTable,
  readPricingData,
} from '../../sdk/index.js';

export const PLUGIN_NAME = 'pricing';


const amount = v.pipe(v.number(), v.minValue(0, 'must be at least 0 (per million tokens)'));
const PriceSchema = v.strictObject({
  input: amount,
  output: amount,
  cached_input: v.optional(amount),
  reasoning: v.optional(amount),
});

const OptionsSchema = v.strictObject({
  /** A price file of the bundled file's shape that replaces it. */
  file: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Prices laid over the list (bundled or `file`): provider → model → price per million tokens. */
  prices: v.optional(v.record(v.string(), v.record(v.string(), PriceSchema))),
});

export type PricingOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The price list used for request costs: the bundled `prices.json`, or a
 * replacement `file`, with `prices` laid over it (model by model), offered
 * under the SDK's `PRICING` token. Without this plugin the bundled list
 * applies (`pricingOf(api)` in the SDK picks).
 */
export function pricing(options: PricingOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  let table: PricingTable;
  if (opts.file === undefined && opts.prices === undefined) {
    table = bundledPricing();
  } else {
    const data: PricingData = opts.file !== undefined ? readPricingData(opts.file) : bundledPricingData();
    const providers: PricingData['providers'] = {};
    for (const [p, models] of Object.entries(data.providers)) providers[p] = { ...models };
    for (const [p, models] of Object.entries(opts.prices ?? {})) {
      const lowered = Object.fromEntries(Object.entries(models).map(([m, price]) => [m.toLowerCase(), price]));
      providers[p] = { ...providers[p], ...lowered };
    }
    table = new PricingTable({ ...data, providers });
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
