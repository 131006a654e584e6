import { createRequire } from 'node:module';
// Type only: the file is read with require below, but this import makes tsc copy it to dist/.
import type BundledWindows from './context-windows.json';
import { builtOnce, candidates, longestPrefix } from './table.js';

const require = createRequire(import.meta.url);

/** The shape of `context-windows.json`, beside `prices.json` and keyed the same way. */
export interface ContextWindowData {
  /** The list's version, e.g. the date it was checked (`2025-11-01`). */
  version?: string;
  /** What the numbers count, for people (`tokens`). */
  unit?: string;
  /** A note for people: what a window counts, where the numbers come from. */
  note?: string;
  /** Provider name → other providers whose lists also apply. */
  aliases?: Record<string, string[]>;
  /** Provider name → model name (lower case; a prefix of dated or suffixed names) → tokens. */
  providers: Record<string, Record<string, number>>;
}

/** Context windows by provider and model, looked up like prices (exact name, longest listed prefix, aliases). */
export class ContextWindows {
  readonly #providers = new Map<string, Map<string, number>>();
  readonly #aliases = new Map<string, string[]>();

  /** Builds the lookup from a list; throws when a window is not a positive integer of tokens. */
  constructor(data: ContextWindowData) {
    for (const [provider, models] of Object.entries(data.providers)) {
      const map = new Map<string, number>();
      for (const [model, tokens] of Object.entries(models)) {
        if (!Number.isInteger(tokens) || tokens <= 0) throw new Error(`context windows: ${provider} / ${model} must be a positive integer of tokens`);
        map.set(model.toLowerCase(), tokens);
      }
      this.#providers.set(provider, map);
    }
    for (const [provider, others] of Object.entries(data.aliases ?? {})) this.#aliases.set(provider, others);
  }

  /** The context window of `model` at `provider`, in tokens; null when not listed. */
  lookup(provider: string | null, model: string | null): number | null {
    if (provider === null || model === null || model === '') return null;
    const names = candidates(model.toLowerCase());
    for (const list of [provider, ...(this.#aliases.get(provider) ?? [])]) {
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
    }
    return null;
  }
}

/** The data of the context windows shipped with the gateway (`sdk/pricing/context-windows.json`). */
export function bundledContextWindowData(): ContextWindowData {
  return require('./context-windows.json') as typeof BundledWindows as ContextWindowData;
}

/** The context windows shipped with the gateway, built once. */
export const bundledContextWindows: () => ContextWindows = builtOnce(() => new ContextWindows(bundledContextWindowData()));
