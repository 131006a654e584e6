import {
  type AuthInfo,
  type ConfigParser,
  GatewayError,
  type GuardrailValidator,
  type LimitCounters,
  type LimitPolicySet,
  type PartialRelease,
  type PromptLookup,
  type PromptSelector,
  type PromptTemplates,
  type RequestContext,
  type SqlClient,
  type StoredGuardrail,
  type Target,
  type UpstreamClient,
} from '../../sdk/index.js';
import { SealedDocuments, type Identity } from '../../sdk/admin/index.js';
import { TtlCache } from '../../sdk/admin/index.js';
import { applySecretMappings, openCredentials, type SecretMapping } from './credentials.js';
import { hashSecret } from './keys.js';
import { toPolicy } from './policies.js';
import { MAX_INCLUDED_PARTIALS, toPartialRelease, toPromptRelease } from './prompts.js';
import { ControlPlaneRepository, type ApiKeyRow, type WorkspaceRow } from './repository.js';
import { capScopes, ROLE_SCOPES } from './scopes.js';
import type { SecretBox } from './secret-box.js';

export interface OrgSettings {
  user_api_key_rotation_period: 'weekly' | 'monthly' | null;
  user_api_key_auto_create: boolean;
  session_settings: { max_session_ttl: number | null };
}

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

/** A stored key as the request path needs it, built once per cache fill. */
interface KeyEntry {
  id: string;
  auth: AuthInfo;
  status: string;
  hash: string;
  previousExpiresAt: number | null;
  expiresAt: number | null;
  rotationDueAt: number | null;
  rotationDeadline: number | null;
  workspaceId: string | null;
}

/** A provider slug resolved to its provider and credentials. */
interface ProviderEntry {
  target: Target;
  /** Per-model base URLs from the integration's models. */
  modelHosts: ReadonlyMap<string, string> | null;
  /** Models the integration lists as disabled. */
  disabled: ReadonlySet<string> | null;
  slug: string;
}

export interface ControlPlaneDeps {
  db: () => SqlClient;
  box: () => SecretBox;
  now: () => number;
  cacheTtlMs: number;
  /** Whether the admin API is served (the plugin's `routes` option). Default true. */
  adminRoutes?: boolean;
  secretsDir: string;
  /** The config plugin's parser (saved configs are validated and built with the same schema as inline ones). */
  parser: () => ConfigParser;
  /** Target fields declared as credentials: sealed at rest, masked in every answer. */
  secretFields: ReadonlySet<string>;
  /** The `limits` plugin's counters, when it is loaded (for the policies' usage routes). */
  counters?: () => LimitCounters | undefined;
  /** The `prompts` plugin's template language, when it is loaded (stored prompts are checked with it when saved). */
  templates?: () => PromptTemplates | undefined;
  /** The `guardrails` plugin's entry check, when it is loaded (stored guardrails are validated with it). */
  guardrailValidator?: () => GuardrailValidator | undefined;
  /** The pooled upstream client (URL checks against the outbound host policy). */
  upstream?: () => UpstreamClient;
}

/** A signed-in person's session, as the request path checks it. */
export interface SessionEntry {
  id: string;
  userId: string;
  email: string;
  name: string | null;
  /** When the person signed in: `max_session_ttl` counts from here. */
  createdAt: number;
  /** The latest end the session was given when it started. */
  expiresAt: number;
  /** False once SCIM deactivated the person. */
  active: boolean;
}

/** A workspace a user belongs to, with the role there. */
export interface Membership {
  workspaceId: string;
  slug: string;
  name: string;
  role: string;
}

const NO_PROMPT: PromptLookup = Object.freeze({ missing: 'prompt' as const });

/** The answer for a request in no workspace: nothing to enforce. */
const NO_LIMITS: LimitPolicySet = Object.freeze({ workspaceId: null, policies: Object.freeze([]) });

const MAX_CACHED = 10_000;
/** Role of a user key whose owner left the workspace: the key is refused. */
const NO_MEMBER = 'none';

/**
 * The control plane's state as the request path sees it: stored keys,
 * workspaces, provider slugs and saved configs, each read through a short
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
  readonly #keys: TtlCache<KeyEntry | null>;
  readonly #workspaces: TtlCache<WorkspaceRow | null>;
  readonly #providers: TtlCache<ProviderEntry | null>;
  readonly #configs: TtlCache<Target | null>;
  readonly #settings: TtlCache<OrgSettings>;
  readonly #limits: TtlCache<LimitPolicySet>;
  readonly #guardrails: TtlCache<StoredGuardrail | null>;
  readonly #sessions: TtlCache<SessionEntry | null>;
  readonly #memberships: TtlCache<readonly Membership[]>;
  readonly #prompts: TtlCache<PromptLookup>;
  readonly #partials: TtlCache<PartialRelease | null>;

  constructor(deps: ControlPlaneDeps) {
    this.#deps = deps;
    this.now = deps.now;
    this.cacheTtlMs = deps.cacheTtlMs;
    this.adminRoutes = deps.adminRoutes ?? true;
    this.repo = new ControlPlaneRepository(deps.db);
    const cache = <V>() => new TtlCache<V>(deps.cacheTtlMs, MAX_CACHED, deps.now);
    this.#keys = cache();
    this.#workspaces = cache();
    this.#providers = cache();
    this.#configs = cache();
    this.#settings = cache();
    this.#limits = cache();
    this.#guardrails = cache();
    this.#sessions = cache();
    this.#memberships = cache();
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

  /** The limits plugin's counters, or undefined when it is not loaded. */
  get counters(): LimitCounters | undefined {
    return this.#deps.counters?.();
  }

  get box(): SecretBox {
    return this.#deps.box();
  }

  /** The guardrails plugin's entry check; a 503 when that plugin is not loaded. */
  get guardrailValidator(): GuardrailValidator {
    const validator = this.#deps.guardrailValidator?.();
    if (validator === undefined) throw new GatewayError('service_unavailable', 'Stored guardrails need the guardrails plugin, which is not loaded.');
    return validator;
  }

  /**
   * A stored guardrail of a workspace (by id or slug) as the request path runs
   * it, through the cache: synchronous when cached, and the same frozen object
   * until it expires or an admin write clears it. Archived ones are returned
   * too (a config naming one is refused, not silently let through).
   */
  guardrailFor(workspaceId: string, ref: string): StoredGuardrail | undefined | Promise<StoredGuardrail | undefined> {
    const found = this.#guardrails.get(`${workspaceId}\n${ref}`, async () => {
      const row = await this.repo.guardrail(workspaceId, ref);
      if (row === undefined) return null;
      const entry = this.guardrailDocuments.open(row.id, row, `Stored guardrail ${row.slug}`) as Record<string, unknown>;
      return Object.freeze({ id: row.id, version: row.version, status: row.status, entry: Object.freeze(entry) });
    });
    return found instanceof Promise ? found.then((g) => g ?? undefined) : (found ?? undefined);
  }

  /** The gateway's config parser (the config plugin's). */
  get configParser(): ConfigParser {
    return this.#deps.parser();
  }

  /** Credential fields of targets: sealed at rest, masked in answers. */
  get secretFields(): ReadonlySet<string> {
    return this.#deps.secretFields;
  }

  /** The credentials inside saved configs, sealed per version (sdk/admin SealedDocuments). */
  readonly configDocuments = new SealedDocuments('config', () => this.box, () => this.#documentKeys());
  /** The credentials inside stored guardrails, sealed per version. */
  readonly guardrailDocuments = new SealedDocuments('guardrail', () => this.box, () => this.#documentKeys());

  /**
   * The keys whose values are credentials in a stored config or guardrail, at any depth: the
   * target fields declared as credentials and the loaded checks' credential parameters.
   */
  #documentKeys(): ReadonlySet<string> {
    const checks = this.#deps.guardrailValidator?.()?.credentialKeys() ?? [];
    return new Set([...this.#deps.secretFields, ...checks]);
  }

  /** Seals the configs and guardrails written before sealing existed (see SealedDocuments.sealLegacy). */
  async sealLegacyDocuments(): Promise<number> {
    const db = this.repo.db();
    return (await this.configDocuments.sealLegacy(db, 'cp_config_versions', 'config_id')) + (await this.guardrailDocuments.sealLegacy(db, 'cp_guardrail_versions', 'guardrail_id'));
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
    this.#keys.clear();
    this.#workspaces.clear();
    this.#providers.clear();
    this.#configs.clear();
    this.#settings.clear();
    this.#limits.clear();
    this.#prompts.clear();
    this.#partials.clear();
    this.#guardrails.clear();
    this.#sessions.clear();
    this.#memberships.clear();
  }

  /** The session whose secret has this digest, through the cache; null when there is none. */
  session(digest: string): SessionEntry | null | Promise<SessionEntry | null> {
    return this.#sessions.get(digest, async () => {
      const row = await this.repo.db().get<Record<string, unknown>>(
        'SELECT s.id, s.user_id, s.created_at, s.expires_at, u.email, u.name, su.active FROM cp_sessions s JOIN cp_users u ON u.id = s.user_id LEFT JOIN cp_scim_users su ON su.user_id = s.user_id WHERE s.token_hash = ?',
        [digest],
      );
      if (row === undefined) return null;
      return Object.freeze({
        id: row.id as string,
        userId: row.user_id as string,
        email: row.email as string,
        name: (row.name as string | null) ?? null,
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
        active: row.active === null || row.active === undefined || Number(row.active) === 1,
      });
    });
  }

  /** A user's workspaces (active ones), oldest membership first, through the cache. */
  memberships(userId: string): readonly Membership[] | Promise<readonly Membership[]> {
    return this.#memberships.get(userId, async () => {
      const rows = await this.repo.db().all<{ workspace_id: string; slug: string; name: string; role: string }>(
        "SELECT m.workspace_id, w.slug, w.name, m.role FROM cp_members m JOIN cp_workspaces w ON w.id = m.workspace_id WHERE m.user_id = ? AND w.status = 'active' ORDER BY m.created_at, m.workspace_id",
        [userId],
      );
      return Object.freeze(rows.map((r) => Object.freeze({ workspaceId: r.workspace_id, slug: r.slug, name: r.name, role: r.role })));
    });
  }

  /**
   * The active rate limits and budgets of the workspace a request acts in
   * (see {@link requestWorkspace}), through the cache: synchronous when cached,
   * the same object until it expires or an admin write clears it.
   */
  limitPolicies(ctx: RequestContext): LimitPolicySet | Promise<LimitPolicySet> {
    const own = ctx.auth?.workspaceId;
    if (own) return this.#limitSet(own);
    const named = ctx.header('x-gateway-workspace');
    const found = this.workspace(named !== undefined && named !== '' ? named : 'default');
    const pick = (ws: WorkspaceRow | null): LimitPolicySet | Promise<LimitPolicySet> => {
      if (ws === null || ws.status !== 'active') {
        if (named !== undefined && named !== '') throw new GatewayError('not_found', `No workspace "${named.slice(0, 64)}".`, { param: 'x-gateway-workspace' });
        return NO_LIMITS;
      }
      return this.#limitSet(ws.id);
    };
    return found instanceof Promise ? found.then(pick) : pick(found);
  }

  #limitSet(workspaceId: string): LimitPolicySet | Promise<LimitPolicySet> {
    return this.#limits.get(workspaceId, async () => {
      const policies = (await this.repo.activeLimitPolicies(workspaceId)).map(toPolicy);
      return Object.freeze({ workspaceId, policies: Object.freeze(policies) });
    });
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
    const own = ctx.auth?.workspaceId;
    if (own) return own;
    const named = ctx.header('x-gateway-workspace');
    const ws = await this.workspace(named !== undefined && named !== '' ? named : 'default');
    if (ws === null || ws.status !== 'active') {
      if (named !== undefined && named !== '') throw new GatewayError('not_found', `No workspace "${named.slice(0, 64)}".`, { param: 'x-gateway-workspace' });
      return null;
    }
    return ws.id;
  }

  /**
   * Authenticates a stored API key. Undefined when the secret is not a
   * stored key (another auth tap may know it); throws 401/403 when it is one
   * that may not be used now.
   */
  async authenticate(secret: string, ctx: RequestContext): Promise<AuthInfo | undefined> {
    const hash = hashSecret(secret);
    const entry = await this.#keys.get(hash, async () => {
      const row = await this.repo.apiKeyByHash(hash);
      return row === undefined ? null : this.#keyEntry(row);
    });
    if (entry === null) return undefined;
    const now = this.now();
    if (entry.status !== 'active') throw new GatewayError('unauthorized', 'This API key is disabled.', { param: 'x-gateway-api-key' });
    if (entry.auth.role === NO_MEMBER) throw new GatewayError('unauthorized', 'The user of this API key is no longer a member of its workspace.', { param: 'x-gateway-api-key' });
    if (entry.expiresAt !== null && now >= entry.expiresAt) {
      throw new GatewayError('unauthorized', `This API key expired at ${iso(entry.expiresAt)}.`, { param: 'x-gateway-api-key' });
    }
    if (hash !== entry.hash) {
      // The previous secret of a rotated key: valid only during the transition period.
      if (entry.previousExpiresAt === null || now >= entry.previousExpiresAt) {
        throw new GatewayError('unauthorized', `This API key was rotated; its previous secret stopped working at ${iso(entry.previousExpiresAt ?? 0)}. Use the new secret.`, {
          param: 'x-gateway-api-key',
        });
      }
      ctx.responseHeaders['x-gateway-api-key-expires-at'] = iso(entry.previousExpiresAt);
    }
    if (entry.rotationDueAt !== null && now >= entry.rotationDueAt) {
      if (now >= entry.rotationDeadline!) {
        throw new GatewayError(
          'unauthorized',
          `This API key's rotation was due at ${iso(entry.rotationDueAt)} and its grace period ended at ${iso(entry.rotationDeadline!)}; rotate it (POST /v1/api-keys/${entry.id}/rotate) with another admin key.`,
          { param: 'x-gateway-api-key' },
        );
      }
      ctx.responseHeaders['x-gateway-api-key-rotation-due'] = iso(entry.rotationDeadline!);
    }
    if (entry.workspaceId !== null) {
      const ws = await this.workspace(entry.workspaceId);
      if (ws === null || ws.status !== 'active') throw new GatewayError('forbidden', 'The workspace of this API key is archived.', { param: 'x-gateway-api-key' });
    }
    return entry.auth;
  }

  async #keyEntry(row: ApiKeyRow): Promise<KeyEntry> {
    let role = row.type === 'organisation-service' ? 'admin' : 'manager';
    let scopes = JSON.parse(row.scopes) as string[];
    if (row.type === 'workspace-user' && row.user_id !== null && row.workspace_id !== null) {
      // A user key acts with its owner's current role: never more than the role allows.
      const member = await this.repo.member(row.workspace_id, row.user_id);
      role = member?.role ?? NO_MEMBER;
      scopes = capScopes(scopes, ROLE_SCOPES[role] ?? []);
    }
    const policy = row.rotation_policy === null ? null : (JSON.parse(row.rotation_policy) as RotationPolicy);
    const dueAt = policy?.next_rotation_at ? Date.parse(policy.next_rotation_at) : null;
    return {
      id: row.id,
      auth: Object.freeze({ keyId: row.id, workspaceId: row.workspace_id, scopes: Object.freeze(scopes), role, type: row.type, userId: row.user_id }),
      status: row.status,
      hash: row.key_hash,
      previousExpiresAt: row.previous_expires_at,
      expiresAt: row.expires_at,
      rotationDueAt: dueAt,
      rotationDeadline: dueAt === null ? null : dueAt + (policy?.key_transition_period_ms ?? 30 * 60_000),
      workspaceId: row.workspace_id,
    };
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
      const owner = integration.workspace_id === null ? null : await this.workspace(integration.workspace_id);
      if (integration.workspace_id !== null && owner === null) return null;
      const scope = { workspaceSlug: owner?.slug ?? null };
      await applySecretMappings(target, JSON.parse(integration.secret_mappings) as SecretMapping[], this.#deps.secretsDir, scope).catch((err: Error) => {
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

  /** A saved config of a workspace (by id or slug), as a target tree; undefined when there is none. */
  async configTarget(workspaceId: string, ref: string): Promise<Target | undefined> {
    const target = await this.#configs.get(`${workspaceId}\n${ref}`, async () => {
      const row = await this.repo.config(workspaceId, ref);
      if (row === undefined || row.status !== 'active') return null;
      const version = await this.repo.configVersion(row.id, row.version);
      return version === undefined ? null : this.#deps.parser().parse(this.configDocuments.open(row.id, version, `Saved config ${row.slug}`));
    });
    return target ?? undefined;
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

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
