import * as v from 'valibot';
import { GatewayError, parseOptions, plainObject, type GatewayPlugin, type Target } from '../../core/index.js';

export const PLUGIN_NAME = 'provider-registry';

/** Interceptor stage: outermost, so retry, breaker and timeout see the resolved provider and credentials. */
export const REGISTRY_STAGE = -100;

const EntrySchema = v.pipe(
  plainObject(),
  v.looseObject({ provider: v.pipe(v.string(), v.minLength(1, 'names the provider behind the slug')) }),
  v.check((e) => !String(e.provider).startsWith('@'), 'must be a provider name, not another slug'),
);

const OptionsSchema = v.strictObject({
  /** Slug (without `@`) → the provider and credentials it stands for. */
  providers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/, 'slugs are letters, digits, . _ -')), EntrySchema), {}),
});

/** Entries are checked at boot: each needs a loaded `provider` name. */
export interface ProviderRegistryOptions {
  providers?: Record<string, Record<string, unknown>>;
}

/**
 * Provider slugs and virtual keys. `x-gateway-provider: @slug`, a config's
 * `provider: "@slug"`, `virtual_key: "slug"` and `x-gateway-virtual-key:
 * slug` resolve to the provider and credentials registered under the slug.
 * The target's own settings win over the registered ones, except the
 * provider itself. For now the entries come from the server config's
 * `providers` map; the control plane stores them later.
 */
export function providerRegistry(options: ProviderRegistryOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const entries = new Map<string, Target>(Object.entries(opts.providers).map(([slug, entry]) => [slug, Object.freeze({ ...entry }) as Target]));
  return {
    name: PLUGIN_NAME,
    apply(api) {
      for (const [slug, entry] of entries) {
        if (!api.providers.has(entry.provider!)) {
          // Checked once the registry is complete: providers may be applied after this plugin.
          api.onReady(() => {
            if (!api.providers.has(entry.provider!)) throw new Error(`${PLUGIN_NAME}: slug "${slug}" names provider "${entry.provider}", which is not loaded`);
          });
        }
      }
      api.addInterceptor(PLUGIN_NAME, (next) => (ctx, target) => next(ctx, resolveTarget(entries, target)), REGISTRY_STAGE);
    },
  };
}

/** The target with its slug or virtual key replaced by the registered provider and credentials. */
export function resolveTarget(entries: ReadonlyMap<string, Target>, target: Target): Target {
  const provider = target.provider;
  let ref: string | undefined;
  let param: string;
  if (typeof provider === 'string' && provider.startsWith('@')) {
    ref = provider.slice(1);
    param = 'provider';
  } else if (provider === undefined && typeof target.virtual_key === 'string') {
    ref = target.virtual_key;
    param = 'virtual_key';
  } else {
    return target;
  }
  const entry = entries.get(ref);
  if (entry === undefined) {
    throw new GatewayError('unknown_provider', `Unknown provider ${param === 'provider' ? `slug "@${ref}"` : `virtual key "${ref.slice(0, 64)}"`}.`, { param });
  }
  const { provider: _p, virtual_key: _v, ...own } = target;
  return { ...entry, ...stripUndefined(own), provider: entry.provider };
}

function stripUndefined(t: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in t) if (t[k] !== undefined) out[k] = t[k];
  return out;
}

export default providerRegistry;
