import * as v from 'valibot';
import { GatewayError, parseOptions, plainObject, type GatewayPlugin, type RequestContext, type Target } from '../../core/index.js';

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

/**
 * Token of an optional source of slugs beyond the server config's (the
 * control plane provides one, scoped to the caller's workspace). Asked for
 * slugs and virtual keys the server config does not know.
 */
export const PROVIDER_SOURCE = Symbol.for('gateway.provider-source');

/**
 * Finds the provider and credentials behind a slug (without `@`) or virtual
 * key for a request; undefined when unknown. `target` is the request's target
 * naming the slug (its `override_params.model` may pick per-model settings).
 */
export interface ProviderSource {
  find(ctx: RequestContext, ref: string, target: Target): Promise<Target | undefined>;
}

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
    apply(api) {
      for (const [slug, entry] of entries) {
        if (!api.providers.has(entry.provider!)) {
          // Checked once the registry is complete: providers may be applied after this plugin.
          api.onReady(() => {
            if (!api.providers.has(entry.provider!)) throw new Error(`${PLUGIN_NAME}: slug "${slug}" names provider "${entry.provider}", which is not loaded`);
          });
        }
      }
      let source: ProviderSource | null = null;
      api.onReady(() => {
        try {
          source = api.resolve<ProviderSource>(PROVIDER_SOURCE);
        } catch {
          source = null;
        }
      });
      api.addInterceptor(
        PLUGIN_NAME,
        (next) => (ctx, target) => {
          const ref = referenceOf(target);
          if (ref === null || entries.has(ref.name) || source === null) return next(ctx, resolveTarget(entries, target));
          return source.find(ctx, ref.name, target).then((entry) => {
            if (entry === undefined) throw unknownReference(ref);
            return next(ctx, merge(entry, target, ref));
          });
        },
        REGISTRY_STAGE,
      );
    },
  };
}

/** The target with its slug or virtual key replaced by the registered provider and credentials. */
export function resolveTarget(entries: ReadonlyMap<string, Target>, target: Target): Target {
  const ref = referenceOf(target);
  if (ref === null) return target;
  const entry = entries.get(ref.name);
  if (entry === undefined) throw unknownReference(ref);
  return merge(entry, target, ref);
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
 * Fields that are credentials or build the upstream host: a caller may not change them on a slug.
 * Path and version settings (`deployment_id`, `api_version`, `azure_entra_scope`, …) stay overridable.
 */
const GUARDED: ReadonlySet<string> = new Set([
  'api_key',
  'custom_host',
  'resource_name',
  'azure_endpoint_name',
  'azure_region',
  'azure_ad_token',
  'azure_entra_tenant_id',
  'azure_entra_client_id',
  'azure_entra_client_secret',
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_session_token',
  'aws_region',
  'vertex_project_id',
  'vertex_region',
  'vertex_service_account_json',
]);
const isGuarded = (field: string) => GUARDED.has(field);

/**
 * The entry's provider and credentials with the request's other settings
 * (retry, cache, override_params…). A request may not move a slug elsewhere:
 * its own `custom_host`, key or placement next to a slug would send the
 * stored credentials to a host of the caller's choosing, so they are refused.
 */
function merge(entry: Target, target: Target, ref: Reference): Target {
  const { provider: _p, virtual_key: _v, ...own } = target;
  for (const field in own) {
    if (own[field] === undefined || !isGuarded(field) || own[field] === entry[field]) continue;
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
