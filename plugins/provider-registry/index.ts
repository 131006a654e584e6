import * as v from 'valibot';
import {
  fieldSchema,
  GatewayError,
  parseOptions,
  plainObject,
  PROVIDER_SOURCE,
  STAGES,
  type GatewayPlugin,
  type ProviderSource,
  type Target,
  type TargetField,
} from '../../sdk/index.js';

export const PLUGIN_NAME = 'provider-registry';

const EntrySchema = v.pipe(
  plainObject(),
  v.looseObject({ provider: v.pipe(v.string(), v.minLength(1, 'names the provider behind the slug')) }),
  v.check((e) => !String(e.provider).startsWith('@'), 'must be a provider name, not another slug'),
);

const OptionsSchema = v.strictObject({
  /** Slug (without `@`) → the provider and credentials it stands for. */
  providers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/, 'slugs are letters, digits, . _ -')), EntrySchema), {}),
});

/** The spec's `virtual_key` (a slug by its older name), owned here: this plugin resolves it. */
const FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  virtual_key: { schema: fieldSchema.string(), credential: true, inherit: 'same-provider', combination: ['virtual_key'] },
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
 * provider itself. Entries come from the server config's `providers` map
 * and, for other slugs, from a {@link ProviderSource} (the control plane).
 */
export function providerRegistry(options: ProviderRegistryOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const entries = new Map<string, Target>(Object.entries(opts.providers).map(([slug, entry]) => [slug, Object.freeze({ ...entry }) as Target]));
  return {
    name: PLUGIN_NAME,
    targetFields: FIELDS,
    apply(api) {
      for (const [slug, entry] of entries) {
        if (!api.providers.has(entry.provider!)) {
          // Checked once the registry is complete: providers may be applied after this plugin.
          api.onReady(() => {
            if (!api.providers.has(entry.provider!)) throw new Error(`${PLUGIN_NAME}: slug "${slug}" names provider "${entry.provider}", which is not loaded`);
          });
        }
      }
      // Credentials and the fields that decide where a call goes: a request may not set them next to a slug.
      const guarded: ReadonlySet<string> = new Set(api.targetFields.names((f) => f.credential === true || f.placement === true));
      let source: ProviderSource | undefined;
      api.onReady(() => {
        source = api.tryResolve(PROVIDER_SOURCE);
      });
      api.hooks.resolveTarget.tapPromise({ name: PLUGIN_NAME, stage: STAGES.resolveTarget.REFERENCES }, async (target, ctx) => {
        const ref = referenceOf(target);
        if (ref === null) return target;
        const entry = entries.get(ref.name) ?? (await source?.find(ctx, ref.name, target));
        if (entry === undefined) throw unknownReference(ref);
        return merge(entry, target, ref, guarded);
      });
    },
  };
}

interface Reference {
  name: string;
  param: 'provider' | 'virtual_key';
}

/** The slug or virtual key a target refers to, or null when it names a provider directly. */
function referenceOf(target: Target): Reference | null {
  const provider = target.provider;
  if (typeof provider === 'string' && provider.startsWith('@')) return { name: provider.slice(1), param: 'provider' };
  if (provider === undefined && typeof target.virtual_key === 'string') return { name: target.virtual_key, param: 'virtual_key' };
  return null;
}

/** Unknown here and in the caller's workspace alike: a 404 that does not tell the two apart. */
function unknownReference(ref: Reference): GatewayError {
  const what = ref.param === 'provider' ? `provider slug "@${ref.name.slice(0, 64)}"` : `virtual key "${ref.name.slice(0, 64)}"`;
  return new GatewayError('not_found', `Unknown ${what} (slugs belong to a workspace: check the API key's workspace).`, { param: ref.param });
}

/**
 * The entry's provider and credentials with the request's other settings
 * (retry, cache, override_params…). A request may not move a slug elsewhere:
 * its own `custom_host`, key or placement next to a slug would send the
 * stored credentials to a host of the caller's choosing, so they are refused.
 */
function merge(entry: Target, target: Target, ref: Reference, guarded: ReadonlySet<string>): Target {
  const { provider: _p, virtual_key: _v, ...own } = target;
  for (const field in own) {
    if (own[field] === undefined || !guarded.has(field) || own[field] === entry[field]) continue;
    const what = ref.param === 'provider' ? `provider slug "@${ref.name.slice(0, 64)}"` : `virtual key "${ref.name.slice(0, 64)}"`;
    throw new GatewayError('invalid_request', `"${field}" cannot be set with the ${what}: a slug's stored credentials only go where the slug points.`, {
      param: field === 'custom_host' ? 'x-gateway-custom-host' : field,
    });
  }
  return { ...entry, ...stripUndefined(own), provider: entry.provider };
}

function stripUndefined(t: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in t) if (t[k] !== undefined) out[k] = t[k];
  return out;
}

export default providerRegistry;
