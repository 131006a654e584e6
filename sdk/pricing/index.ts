import type { PluginAPI } from '../../core/index.js';
import { PRICING } from '../tokens.js';
import { bundledPricing, type PricingTable } from './table.js';

export { bundledContextWindowData, bundledContextWindows, ContextWindows, type ContextWindowData } from './context.js';

export {
  bundledPricing,
  bundledPricingData,
  componentsOf,
  costOf,
  entriesOf,
  PRICE_COMPONENTS,
  PricingTable,
  readPricingData,
  type CostResult,
  type CostStatus,
  type DatedPrice,
  type MatchRule,
  type ModelEntry,
  type ModelPrice,
  type PriceBreakdown,
  type PriceComponent,
  type PriceComponentName,
  type PriceOptions,
  type PricingData,
  type Rate,
} from './table.js';

/** The price list a plugin should use: the `pricing` plugin's, else the bundled one. Call from `onReady` or later. */
export function pricingOf(api: PluginAPI): PricingTable {
  return api.tryResolve(PRICING) ?? bundledPricing();
}
