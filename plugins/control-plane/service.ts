import {
  type AuthInfo,
  GatewayError,
  type RequestContext,
  type SqlClient,
  type Target,
  type UpstreamClient,
} from '../../sdk/index.js';
import { requestWorkspaceOf, type Identity, type OrgSettings } from '../../sdk/admin/index.js';
import { TtlCache } from '../../sdk/admin/index.js';
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
  /** The pooled upstream client (URL checks against the outbound host policy). */
  upstream?: () => UpstreamClient;
}


const MAX_CACHED = 10_000;

/**
 * The control plane's state as the request path sees it: stored keys,
 * workspaces and organisation settings, each read through a short
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
  }

  /** The pooled upstream client. */
  get upstream(): UpstreamClient {
    const upstream = this.#deps.upstream?.();
    if (upstream === undefined) throw new Error('control plane: no upstream client');
    return upstream;
  }

  get box(): SecretBox {
    return this.#deps.box();
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
}
