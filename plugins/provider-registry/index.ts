import { join } from 'node:path';
import * as v from 'valibot';
import { fieldSchema, GatewayError, migrate, parseOptions, plainObject, STAGES, type GatewayPlugin, type PluginAPI, type Target, type TargetField } from '../../sdk/index.js';
import { IDENTITY, toRouteDefinitions, type Identity } from '../../sdk/admin/index.js';
import { INTEGRATIONS_MIGRATIONS, INTEGRATIONS_NAMESPACE } from './store/migrations.js';
import { integrationRoutes } from './store/routes/integrations.js';
import { modelRoutes } from './store/routes/models.js';
import { providerRoutes } from './store/routes/providers.js';
import { ProviderStore } from './store/service.js';

export const PLUGIN_NAME = 'provider-registry';

const EntrySchema = v.pipe(
  plainObject(),
  v.looseObject({ provider: v.pipe(v.string(), v.minLength(1, 'names the provider behind the slug')) }),
  v.check((e) => !String(e.provider).startsWith('@'), 'must be a provider name, not another slug'),
);

const OptionsSchema = v.strictObject({
  /** Slug (without `@`) → the provider and credentials it stands for. */
  providers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/, 'slugs are letters, digits, . _ -')), EntrySchema), {}),
  /** The data directory (the server passes GATEWAY_DATA_DIR): `secretsDir` defaults to `<dataDir>/secrets`. */
  dataDir: v.optional(v.string(), './data'),
  /** Directory that `file:` secret references of integrations read from. Default `<dataDir>/secrets`. */
  secretsDir: v.optional(v.string()),
});

/** The spec's `virtual_key` (a slug by its older name), owned here: this plugin resolves it. */
const FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  virtual_key: { schema: fieldSchema.string(), credential: true, inherit: 'same-provider', combination: ['virtual_key'] },
});

export interface ProviderRegistryOptions {
  /** Slug (without `@`) → the provider and credentials it stands for. Checked at boot: each needs a loaded `provider` name. */
  providers?: Record<string, Record<string, unknown>>;
  /** The data directory (the server passes GATEWAY_DATA_DIR); default `./data`. */
  dataDir?: string;
  /** Directory that `file:` secret references of integrations read from; default `<dataDir>/secrets`. */
  secretsDir?: string;
}

/**
 * Provider slugs and virtual keys. `x-gateway-provider: @slug`, a config's
 * `provider: "@slug"`, `virtual_key: "slug"` and `x-gateway-virtual-key:
 * slug` resolve to the provider and credentials registered under the slug.
 * The target's own settings win over the registered ones, except the
 * provider itself. Entries come from the server config's `providers` map
 * and, for other slugs, from the workspace's provider slugs: with the
 * `control-plane` plugin (listed before this one), this plugin keeps
 * integrations (sealed provider credentials), their models and the slugs of
 * each workspace in its store, and serves their admin routes and
 * `GET /v1/models` (docs/admin-api.md).
 */
export function providerRegistry(options: ProviderRegistryOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const entries = new Map<string, Target>(Object.entries(opts.providers).map(([slug, entry]) => [slug, Object.freeze({ ...entry }) as Target]));
  const secretsDir = opts.secretsDir ?? join(opts.dataDir, 'secrets');
  return {
    name: PLUGIN_NAME,
    targetFields: FIELDS,
    uses: [IDENTITY],
    state: [
      { name: 'slugs', scope: 'workspace', keyedBy: "Provider slugs and their integrations' credentials as the request path reads them: keyed by the workspace the request acts in and the slug." },
    ],
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
      const store = api.provided(IDENTITY) ? storedSlugs(api, secretsDir) : null;
      api.hooks.resolveTarget.tapPromise({ name: PLUGIN_NAME, stage: STAGES.resolveTarget.REFERENCES }, async (target, ctx) => {
        const ref = referenceOf(target);
        if (ref === null) return target;
        const entry = entries.get(ref.name) ?? (await store?.()?.find(ctx, ref.name, target));
        if (entry === undefined) throw unknownReference(ref);
        return merge(entry, target, ref, guarded);
      });
    },
  };
}

/**
 * The workspaces' integrations and slugs, in the control plane's store: their tables are made once
 * the control plane has opened it, and their admin routes are served when the control plane serves
 * its own. Returns the store, there once the gateway is ready.
 */
function storedSlugs(api: PluginAPI, secretsDir: string): () => ProviderStore | null {
  // The tables live in the control plane's store, opened in its onReady: it must be applied (and so ready) first.
  if (api.tryResolve(IDENTITY) === undefined) throw new Error(`${PLUGIN_NAME}: list it after the control-plane plugin, whose store keeps the workspaces' slugs`);
  let identity: Identity | null = null;
  let store: ProviderStore | null = null;
  api.onReady(async () => {
    identity = api.resolve(IDENTITY);
    await migrate(identity.sql(), INTEGRATIONS_NAMESPACE, INTEGRATIONS_MIGRATIONS);
    store = new ProviderStore(identity, { secretsDir, secretFields: api.targetFields.credentials(), upstream: api.upstream });
  });
  const routes = [...integrationRoutes(api.providers), ...providerRoutes, ...modelRoutes];
  for (const route of toRouteDefinitions(api.options.basePath, routes, () => store!, () => identity?.adminRoutes === true)) api.routes.add(route);
  return () => store;
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
