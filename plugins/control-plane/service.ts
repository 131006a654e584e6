import {
  type AuthInfo,
  type ConfigSource,
  GatewayError,
  type GuardrailRunner,
  type Logger,
  type McpSessionCloser,
  type PartialRelease,
  type PromptLookup,
  type PromptSelector,
  type PromptTemplates,
  type RequestContext,
  type SqlClient,
  type Target,
  type UpstreamClient,
} from '../../sdk/index.js';
import { requestWorkspaceOf, type Identity } from '../../sdk/admin/index.js';
import { AgentStore } from './agents.js';
import { TtlCache } from '../../sdk/admin/index.js';
import { hashSecret } from './keys.js';
import { McpStore } from './mcp.js';
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
  /** The pooled upstream client (agent cards; URL checks against the outbound host policy). */
  upstream?: () => UpstreamClient;
  /** The `guardrails` plugin's runner, when it is loaded (checks the guardrails of MCP servers). */
  guardrails?: () => GuardrailRunner | undefined;
  /** The `mcp` plugin's session closer, when it is loaded (ends sessions on revocations). */
  mcpCloser?: () => McpSessionCloser | undefined;
  /** How long an agent card is served before it is fetched again, in ms. Default 300 000. */
  agentCardTtlMs?: number;
  logger?: () => Logger | undefined;
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

const MAX_CACHED = 10_000;
/** Role of a user key whose owner left the workspace: the key is refused. */
const NO_MEMBER = 'none';

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
  readonly #keys: TtlCache<KeyEntry | null>;
  readonly #workspaces: TtlCache<WorkspaceRow | null>;
  readonly #settings: TtlCache<OrgSettings>;
  readonly #sessions: TtlCache<SessionEntry | null>;
  readonly #memberships: TtlCache<readonly Membership[]>;
  readonly #prompts: TtlCache<PromptLookup>;
  readonly #partials: TtlCache<PartialRelease | null>;
  /** MCP servers, connections and sessions (the `mcp` plugin's store). */
  readonly mcp: McpStore;
  /** Agents and their cards (the `a2a` plugin's store). */
  readonly agents: AgentStore;

  constructor(deps: ControlPlaneDeps) {
    this.#deps = deps;
    this.now = deps.now;
    this.cacheTtlMs = deps.cacheTtlMs;
    this.adminRoutes = deps.adminRoutes ?? true;
    this.repo = new ControlPlaneRepository(deps.db);
    const cache = <V>() => new TtlCache<V>(deps.cacheTtlMs, MAX_CACHED, deps.now);
    this.#keys = cache();
    this.#workspaces = cache();
    this.#settings = cache();
    this.#sessions = cache();
    this.#memberships = cache();
    this.#prompts = cache();
    this.#partials = cache();
    const workspace = (id: string) => this.workspace(id);
    const logger = () => deps.logger?.();
    this.mcp = new McpStore({ repo: this.repo, box: deps.box, now: deps.now, cacheTtlMs: deps.cacheTtlMs, workspace, closer: () => deps.mcpCloser?.(), logger });
    this.agents = new AgentStore({
      repo: this.repo,
      box: deps.box,
      now: deps.now,
      cacheTtlMs: deps.cacheTtlMs,
      cardTtlMs: deps.agentCardTtlMs ?? 300_000,
      workspace,
      upstream: () => this.upstream,
      logger,
    });
  }

  /** The pooled upstream client. */
  get upstream(): UpstreamClient {
    const upstream = this.#deps.upstream?.();
    if (upstream === undefined) throw new Error('control plane: no upstream client');
    return upstream;
  }

  /** The guardrails plugin's runner, or undefined when it is not loaded. */
  get guardrails(): GuardrailRunner | undefined {
    return this.#deps.guardrails?.();
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
    this.#keys.clear();
    this.#workspaces.clear();
    this.#settings.clear();
    this.#prompts.clear();
    this.#partials.clear();
    this.#sessions.clear();
    this.#memberships.clear();
    this.mcp.clear();
    this.agents.clear();
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
