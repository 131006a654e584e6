import {
  type AuthInfo,
  type ConfigSource,
  GatewayError,
  type PartialRelease,
  type PromptLookup,
  type PromptSelector,
  type PromptTemplates,
  type RequestContext,
  type SqlClient,
  type Target,
  type UpstreamClient,
} from '../../sdk/index.js';
import { requestWorkspaceOf, type Identity, type OrgSettings } from '../../sdk/admin/index.js';
import { TtlCache } from '../../sdk/admin/index.js';
import { MAX_INCLUDED_PARTIALS, toPartialRelease, toPromptRelease } from './prompts.js';
import { ControlPlaneRepository, type WorkspaceRow } from './repository.js';
import type { SecretBox } from './secret-box.js';
import { StoredKeys } from './stored-keys.js';

export type { OrgSettings };

export const DEFAULT_SETTINGS: OrgSettings = Object.freeze({
  user_api_key_rotation_period: null,
  user_api_key_auto_create: false,
  session_settings: Object.freeze({ max_session_ttl: null }),
}) as OrgSettings;

export interface RotationPolicy {
  rotation_period: 'weekly' | 'monthly' | null;
  next_rotation_at: string | null;
  key_transition_period_ms: number | null;
}

export interface ControlPlaneDeps {
  db: () => SqlClient;
  box: () => SecretBox;
  now: () => number;
  cacheTtlMs: number;
  /** Whether the admin API is served (the plugin's `routes` option). Default true. */
  adminRoutes?: boolean;
  /** Target fields declared as credentials: sealed at rest, masked in every answer. */
  secretFields: ReadonlySet<string>;
  /** The `prompts` plugin's template language, when it is loaded (stored prompts are checked with it when saved). */
  templates?: () => PromptTemplates | undefined;
  /** The `config` plugin's saved configs, when it is loaded (a stored prompt naming one is checked with it). */
  configs?: () => ConfigSource | undefined;
  /** The pooled upstream client (URL checks against the outbound host policy). */
  upstream?: () => UpstreamClient;
}

const NO_PROMPT: PromptLookup = Object.freeze({ missing: 'prompt' as const });

const MAX_CACHED = 10_000;

/**
 * The control plane's state as the request path sees it: stored keys,
 * workspaces and saved configs, each read through a short
 * TTL cache. Admin writes call `invalidate()`, so this instance sees them at
 * once and other instances within `cacheTtlMs`.
 */
export class ControlPlane implements Identity {
  readonly repo: ControlPlaneRepository;
  readonly cacheTtlMs: number;
  readonly adminRoutes: boolean;
  readonly #listeners: Array<() => void> = [];
  readonly now: () => number;
  readonly #deps: ControlPlaneDeps;
  /** Stored API keys as the request path checks them. */
  readonly keys: StoredKeys;
  readonly #workspaces: TtlCache<WorkspaceRow | null>;
  readonly #settings: TtlCache<OrgSettings>;
  readonly #prompts: TtlCache<PromptLookup>;
  readonly #partials: TtlCache<PartialRelease | null>;

  constructor(deps: ControlPlaneDeps) {
    this.#deps = deps;
    this.now = deps.now;
    this.cacheTtlMs = deps.cacheTtlMs;
    this.adminRoutes = deps.adminRoutes ?? true;
    this.repo = new ControlPlaneRepository(deps.db);
    const cache = <V>() => new TtlCache<V>(deps.cacheTtlMs, MAX_CACHED, deps.now);
    this.keys = new StoredKeys(this);
    this.#workspaces = cache();
    this.#settings = cache();
    this.#prompts = cache();
    this.#partials = cache();
  }

  /** The pooled upstream client. */
  get upstream(): UpstreamClient {
    const upstream = this.#deps.upstream?.();
    if (upstream === undefined) throw new Error('control plane: no upstream client');
    return upstream;
  }

  /** The `prompts` plugin's template language; a 503 when it is not loaded (stored prompts need it). */
  get promptTemplates(): PromptTemplates {
    const templates = this.#deps.templates?.();
    if (templates === undefined) throw new GatewayError('service_unavailable', 'Stored prompts need the prompts plugin, which is not loaded.');
    return templates;
  }

  get box(): SecretBox {
    return this.#deps.box();
  }

  /** The config plugin's saved configs, or undefined when it is not loaded. */
  get configs(): ConfigSource | undefined {
    return this.#deps.configs?.();
  }

  /** Credential fields of targets: sealed at rest, masked in answers. */
  get secretFields(): ReadonlySet<string> {
    return this.#deps.secretFields;
  }

  /** The store's client (identity's and every feature's tables). */
  sql(): SqlClient {
    return this.#deps.db();
  }

  async organisationId(): Promise<string> {
    const org = await this.repo.organisation();
    if (org === undefined) throw new Error('control plane: no organisation (the gateway is not ready)');
    return org.id;
  }

  async memberRole(workspaceId: string, userId: string): Promise<string | null> {
    return (await this.repo.member(workspaceId, userId))?.role ?? null;
  }

  onInvalidate(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Drops every cached lookup, the features' too; called after each admin write. */
  invalidate(): void {
    for (const listener of this.#listeners) listener();
    this.keys.clear();
    this.#workspaces.clear();
    this.#settings.clear();
    this.#prompts.clear();
    this.#partials.clear();
  }

  settings(): OrgSettings | Promise<OrgSettings> {
    return this.#settings.get('org', async () => {
      const org = await this.repo.organisation();
      return org === undefined ? DEFAULT_SETTINGS : { ...DEFAULT_SETTINGS, ...(JSON.parse(org.settings) as Partial<OrgSettings>) };
    });
  }

  workspace(idOrSlug: string): WorkspaceRow | null | Promise<WorkspaceRow | null> {
    return this.#workspaces.get(idOrSlug, async () => (await this.repo.workspace(idOrSlug)) ?? null);
  }

  /**
   * The workspace a request acts in: the key's own, or for an organisation-wide key the one
   * named by `x-gateway-workspace`, else the default workspace.
   */
  async requestWorkspace(ctx: RequestContext): Promise<string | null> {
    return requestWorkspaceOf(ctx, this);
  }

  /**
   * Authenticates a stored API key. Undefined when the secret is not a
   * stored key (another auth tap may know it); throws 401/403 when it is one
   * that may not be used now.
   */
  authenticate(secret: string, ctx: RequestContext): Promise<AuthInfo | undefined> {
    return this.keys.authenticate(secret, ctx);
  }


  /**
   * The version `selector` names of the prompt `ref` (id or slug) in the workspace a request acts in
   * (see {@link requestWorkspace}), with every partial it includes, through the cache: the same frozen
   * object until it expires or an admin write clears it.
   */
  async promptRelease(ctx: RequestContext, ref: string, selector: PromptSelector): Promise<PromptLookup> {
    const workspaceId = await this.requestWorkspace(ctx);
    if (workspaceId === null) return NO_PROMPT;
    return this.#prompts.get(`${workspaceId}\n${ref}\n${selector}`, () => this.#loadPrompt(workspaceId, ref, selector));
  }

  async #loadPrompt(workspaceId: string, ref: string, selector: PromptSelector): Promise<PromptLookup> {
    const row = await this.repo.prompt(workspaceId, ref);
    if (row === undefined || row.status !== 'active') return NO_PROMPT;
    const number = selector === 'published' ? row.published_version : selector === 'latest' ? row.latest_version : selector;
    const version = number > row.latest_version ? undefined : await this.repo.promptVersion(row.id, number);
    if (version === undefined) return Object.freeze({ missing: 'version' as const, latestVersion: row.latest_version });
    return toPromptRelease(row, version, await this.includedPartials(workspaceId, JSON.parse(version.partials) as string[]));
  }

  /**
   * Every partial that `names` include, directly or through one another, by name: the published
   * version of the workspace's active partial of that name, or null when there is none. At most
   * {@link MAX_INCLUDED_PARTIALS}; a name beyond them is left out (saving refuses such a set).
   */
  async includedPartials(workspaceId: string, names: readonly string[]): Promise<Map<string, PartialRelease | null>> {
    const found = new Map<string, PartialRelease | null>();
    const queue = [...names];
    while (queue.length > 0 && found.size < MAX_INCLUDED_PARTIALS) {
      const name = queue.shift()!;
      if (found.has(name)) continue;
      const partial = await this.#partials.get(`${workspaceId}\n${name}`, async () => {
        const row = await this.repo.activePartial(workspaceId, name);
        const version = row === undefined ? undefined : await this.repo.partialVersion(row.id, row.published_version);
        return row === undefined || version === undefined ? null : toPartialRelease(row, version);
      });
      found.set(name, partial);
      if (partial !== null) queue.push(...partial.partials);
    }
    return found;
  }
}
