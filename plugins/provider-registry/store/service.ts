import { GatewayError, type RequestContext, type SecretBox, type Target, type UpstreamClient } from '../../../sdk/index.js';
import { TtlCache, type Identity } from '../../../sdk/admin/index.js';
import { applySecretMappings, openCredentials, type SecretMapping } from './credentials.js';
import { IntegrationRepository } from './repository.js';

/** A provider slug resolved to its provider and credentials. */
interface ProviderEntry {
  target: Target;
  /** Per-model base URLs from the integration's models. */
  modelHosts: ReadonlyMap<string, string> | null;
  /** Models the integration lists as disabled. */
  disabled: ReadonlySet<string> | null;
  slug: string;
}

/** What the store needs besides identity: the gateway's own registries and settings. */
export interface ProviderStoreDeps {
  /** Directory that `file:` secret references read from (a workspace's integrations: its `workspaces/<slug>/` folder). */
  secretsDir: string;
  /** Target fields declared as credentials: sealed at rest, masked in every answer. */
  secretFields: ReadonlySet<string>;
  /** The pooled upstream client (stored URLs are checked against the outbound host policy). */
  upstream: UpstreamClient;
}

const MAX_CACHED = 10_000;

/**
 * Integrations, their models and the provider slugs of workspaces, kept in
 * the control plane's store: the admin routes' service, and the request
 * path's lookup of a slug (through a short TTL cache that every admin write
 * clears, on this instance at once and on others within `cacheTtlMs`).
 */
export class ProviderStore {
  readonly repo: IntegrationRepository;
  readonly #providers: TtlCache<ProviderEntry | null>;

  constructor(
    readonly identity: Identity,
    private readonly deps: ProviderStoreDeps,
  ) {
    this.repo = new IntegrationRepository(() => identity.sql());
    this.#providers = new TtlCache(identity.cacheTtlMs, MAX_CACHED, () => identity.now());
    identity.onInvalidate(() => this.#providers.clear());
  }

  get box(): SecretBox {
    return this.identity.box;
  }

  get secretFields(): ReadonlySet<string> {
    return this.deps.secretFields;
  }

  get upstream(): UpstreamClient {
    return this.deps.upstream;
  }

  now(): number {
    return this.identity.now();
  }

  /** Drops every cached lookup, identity's and every feature's: called after each admin write. */
  invalidate(): void {
    this.identity.invalidate();
  }

  /** The target behind a slug or virtual key in the workspace a request acts in; undefined when there is none. */
  async find(ctx: RequestContext, ref: string, requested: Target): Promise<Target | undefined> {
    const workspaceId = await this.identity.requestWorkspace(ctx);
    return workspaceId === null ? undefined : this.providerTarget(ctx, workspaceId, ref, requested);
  }

  /**
   * The target behind a provider slug (or virtual key) in a workspace; undefined when there is none.
   * The model (the request target's `override_params.model`, else the body's) picks the integration's
   * per-model host; a model the integration disables is a 403.
   */
  async providerTarget(ctx: RequestContext, workspaceId: string, ref: string, requested?: Target): Promise<Target | undefined> {
    const entry = await this.#providers.get(`${workspaceId}\n${ref}`, () => this.#loadProvider(workspaceId, ref));
    if (entry === null) return undefined;
    if (entry.modelHosts === null && entry.disabled === null) return entry.target;
    const override = (requested?.override_params as { model?: unknown } | undefined)?.model;
    const model = typeof override === 'string' ? override : ctx.model;
    if (model === null) return entry.target;
    if (entry.disabled?.has(model)) throw new GatewayError('forbidden', `Model "${model.slice(0, 128)}" is disabled for provider @${entry.slug}.`, { param: 'model' });
    const host = entry.modelHosts?.get(model);
    return host === undefined ? entry.target : { ...entry.target, custom_host: host };
  }

  async #loadProvider(workspaceId: string, ref: string): Promise<ProviderEntry | null> {
    const provider = await this.repo.provider(workspaceId, ref);
    if (provider === undefined || provider.status !== 'active') return null;
    const integration = await this.repo.integration(provider.integration_id);
    if (integration === undefined || integration.status !== 'active') return null;
    if (integration.workspace_id !== null && integration.workspace_id !== workspaceId) return null;
    let creds: ReturnType<typeof openCredentials>;
    try {
      creds = openCredentials(this.box, integration.id, integration.secret);
    } catch {
      throw new GatewayError('service_unavailable', `Provider @${provider.slug}: its integration's credentials cannot be decrypted with this gateway's encryption key.`);
    }
    const target: Target = { ...(JSON.parse(integration.configurations) as Record<string, unknown>), ...(creds.configurations ?? {}), provider: integration.provider };
    if (creds.key !== undefined) target.api_key = creds.key;
    if (integration.secret_mappings !== null) {
      // A workspace's integration reads only its workspace's secrets (credentials.ts, ReferenceScope).
      const owner = integration.workspace_id === null ? null : await this.identity.workspace(integration.workspace_id);
      if (integration.workspace_id !== null && owner === null) return null;
      const scope = { workspaceSlug: owner?.slug ?? null };
      await applySecretMappings(target, JSON.parse(integration.secret_mappings) as SecretMapping[], this.deps.secretsDir, scope).catch((err: Error) => {
        throw new GatewayError('service_unavailable', `Provider @${provider.slug}: ${err.message}.`);
      });
    }
    if (integration.pricing_multiplier !== null) target.pricing_multiplier = integration.pricing_multiplier;
    let modelHosts: Map<string, string> | null = null;
    let disabled: Set<string> | null = null;
    for (const m of await this.repo.integrationModels(integration.id)) {
      if (m.enabled !== 1) (disabled ??= new Set()).add(m.slug);
      const host = m.configurations === null ? undefined : (JSON.parse(m.configurations) as { custom_host?: string }).custom_host;
      if (host !== undefined) (modelHosts ??= new Map()).set(m.slug, host);
    }
    return { target: Object.freeze(target), modelHosts, disabled, slug: provider.slug };
  }
}
