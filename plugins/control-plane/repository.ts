import type { SqlClient } from '../../sdk/index.js';
import { SqlTables, type Page, type Paged } from '../../sdk/admin/index.js';

/** Rows as stored. JSON columns are TEXT; times are epoch ms. */
export interface OrganisationRow {
  id: string;
  name: string;
  settings: string;
  created_at: number;
  updated_at: number;
}
export interface WorkspaceRow {
  id: string;
  organisation_id: string;
  slug: string;
  name: string;
  description: string | null;
  status: 'active' | 'archived';
  metadata: string | null;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  role: string;
  created_at: number;
  updated_at: number;
}
export interface MemberRow {
  workspace_id: string;
  user_id: string;
  role: string;
  created_at: number;
  updated_at: number;
  email?: string;
  name?: string | null;
}
export interface ApiKeyRow {
  id: string;
  organisation_id: string;
  workspace_id: string | null;
  user_id: string | null;
  type: string;
  name: string;
  description: string | null;
  scopes: string;
  status: string;
  key_hash: string;
  key_mask: string;
  previous_hash: string | null;
  previous_expires_at: number | null;
  rotation_policy: string | null;
  last_rotated_at: number | null;
  expires_at: number | null;
  metadata: string | null;
  created_at: number;
  updated_at: number;
}
export interface IntegrationRow {
  id: string;
  organisation_id: string;
  workspace_id: string | null;
  slug: string;
  name: string;
  description: string | null;
  provider: string;
  status: string;
  secret: string | null;
  masked: string;
  configurations: string;
  secret_mappings: string | null;
  pricing_multiplier: number | null;
  created_at: number;
  updated_at: number;
}
export interface IntegrationModelRow {
  integration_id: string;
  slug: string;
  enabled: number;
  configurations: string | null;
  created_at: number;
  updated_at: number;
}
export interface ProviderRow {
  id: string;
  workspace_id: string;
  slug: string;
  name: string;
  integration_id: string;
  note: string | null;
  status: string;
  created_at: number;
  updated_at: number;
}
export interface ConfigRow {
  id: string;
  workspace_id: string;
  slug: string;
  name: string;
  status: string;
  version: number;
  created_at: number;
  updated_at: number;
}
export interface ConfigVersionRow {
  config_id: string;
  version: number;
  /** The config, credentials masked (see `sealed`). */
  body: string;
  /** Its credentials, sealed (sdk/sealed-json.ts); '' for none; null for a version not sealed yet. */
  sealed: string | null;
  created_at: number;
}

export interface PromptRow {
  id: string;
  workspace_id: string;
  slug: string;
  name: string;
  status: 'active' | 'archived';
  latest_version: number;
  published_version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface PromptVersionRow {
  prompt_id: string;
  version: number;
  /** JSON: `template`, one of `provider` / `virtual_key` / `config`, `variables`, `description`. */
  body: string;
  /** JSON array: the partials the template includes directly. */
  partials: string;
  created_at: number;
}
export interface PartialRow {
  id: string;
  workspace_id: string;
  name: string;
  status: 'active' | 'archived';
  latest_version: number;
  published_version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface PartialVersionRow {
  partial_id: string;
  version: number;
  content: string;
  description: string | null;
  /** JSON array: the partials the content includes directly. */
  partials: string;
  created_at: number;
}

export interface GuardrailRow {
  id: string;
  workspace_id: string;
  slug: string;
  name: string;
  status: 'active' | 'archived';
  version: number;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}
export interface GuardrailVersionRow {
  guardrail_id: string;
  version: number;
  /** The entry, credentials masked (see `sealed`). */
  body: string;
  /** Its credentials, sealed (sdk/sealed-json.ts); '' for none; null for a version not sealed yet. */
  sealed: string | null;
  created_at: number;
}
/** A guardrail with its current version's entry. */
export type GuardrailWithBody = GuardrailRow & { body: string; sealed: string | null };

export interface LimitPolicyRow {
  id: string;
  kind: 'rate' | 'usage';
  organisation_id: string;
  workspace_id: string;
  name: string;
  type: string;
  unit: string | null;
  value: number | null;
  credit_limit: number | null;
  alert_threshold: number | null;
  periodic_reset: string | null;
  periodic_reset_days: number | null;
  next_usage_reset_at: number | null;
  period_start_at: number | null;
  conditions: string;
  group_by: string;
  fail_open: number;
  status: 'active' | 'archived';
  /** `organisation`: made by an organisation-level key, which alone may change it; else `workspace`. */
  managed_by: 'organisation' | 'workspace';
  created_at: number;
  updated_at: number;
  archived_at: number | null;
}

export type { Page, Paged } from '../../sdk/admin/index.js';

/** The resources kept in versions, and the column of each that counts them (see `nextVersion`). */
const VERSION_COUNTERS = Object.freeze({ cp_configs: 'version', cp_guardrails: 'version', cp_prompts: 'latest_version', cp_prompt_partials: 'latest_version' });

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set([
  'created_at', 'updated_at', 'archived_at', 'previous_expires_at', 'last_rotated_at', 'expires_at', 'version', 'enabled', 'pricing_multiplier',
  'value', 'credit_limit', 'alert_threshold', 'periodic_reset_days', 'next_usage_reset_at', 'period_start_at', 'fail_open',
  'latest_version', 'published_version',
]);

/**
 * Every statement the control plane runs, against either SQL store. Column
 * and table names come from this file only; values always go as parameters.
 */
export class ControlPlaneRepository {
  readonly tables: SqlTables;

  constructor(readonly db: () => SqlClient) {
    this.tables = new SqlTables(db, NUMERIC);
  }

  #get<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T | undefined> {
    return this.tables.get<T>(sql, params, client);
  }

  #all<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T[]> {
    return this.tables.all<T>(sql, params, client);
  }

  #paged<T>(from: string, params: readonly unknown[], order: string, page: Page, select = '*'): Promise<Paged<T>> {
    return this.tables.paged<T>(from, params, order, page, select);
  }

  insert(table: string, row: Record<string, unknown>, client = this.db()): Promise<void> {
    return this.tables.insert(table, row, client);
  }

  update(table: string, where: Record<string, unknown>, patch: Record<string, unknown>, client = this.db()): Promise<number> {
    return this.tables.update(table, where, patch, client);
  }

  /** The next version number of a versioned resource, inside `tx` (see {@link SqlTables.nextVersion}). */
  nextVersion(table: keyof typeof VERSION_COUNTERS, id: string, now: number, tx: SqlClient): Promise<number> {
    return this.tables.nextVersion(table, VERSION_COUNTERS[table], id, now, tx);
  }

  // Organisation

  organisation(client = this.db()): Promise<OrganisationRow | undefined> {
    return this.#get<OrganisationRow>('SELECT * FROM cp_organisations ORDER BY created_at LIMIT 1', [], client);
  }

  // Workspaces

  workspace(idOrSlug: string): Promise<WorkspaceRow | undefined> {
    return this.#get<WorkspaceRow>('SELECT * FROM cp_workspaces WHERE id = ? OR slug = ?', [idOrSlug, idOrSlug]);
  }

  workspaces(statuses: readonly string[], onlyId: string | null, page: Page): Promise<Paged<WorkspaceRow>> {
    const params: unknown[] = [...statuses];
    let from = `FROM cp_workspaces WHERE status IN (${statuses.map(() => '?').join(', ')})`;
    if (onlyId !== null) {
      from += ' AND id = ?';
      params.push(onlyId);
    }
    return this.#paged<WorkspaceRow>(from, params, 'created_at, id', page);
  }

  defaultWorkspace(): Promise<WorkspaceRow | undefined> {
    return this.#get<WorkspaceRow>("SELECT * FROM cp_workspaces WHERE slug = 'default'", []);
  }

  // Users and members

  userByEmail(email: string): Promise<UserRow | undefined> {
    return this.#get<UserRow>('SELECT * FROM cp_users WHERE email = ?', [email]);
  }

  user(id: string): Promise<UserRow | undefined> {
    return this.#get<UserRow>('SELECT * FROM cp_users WHERE id = ?', [id]);
  }

  member(workspaceId: string, userId: string): Promise<MemberRow | undefined> {
    return this.#get<MemberRow>(
      'SELECT m.*, u.email, u.name FROM cp_members m JOIN cp_users u ON u.id = m.user_id WHERE m.workspace_id = ? AND m.user_id = ?',
      [workspaceId, userId],
    );
  }

  members(workspaceId: string, page: Page): Promise<Paged<MemberRow>> {
    return this.#paged<MemberRow>(
      'FROM cp_members m JOIN cp_users u ON u.id = m.user_id WHERE m.workspace_id = ?',
      [workspaceId],
      'm.created_at, m.user_id',
      page,
      // Both tables have role and times: the member's must win.
      'm.*, u.email, u.name',
    );
  }

  async removeMember(workspaceId: string, userId: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_members WHERE workspace_id = ? AND user_id = ?', [workspaceId, userId])).changes > 0;
  }

  // API keys

  apiKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.#get<ApiKeyRow>('SELECT * FROM cp_api_keys WHERE id = ?', [id]);
  }

  /** The key whose current or previous secret has this digest. */
  apiKeyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.#get<ApiKeyRow>('SELECT * FROM cp_api_keys WHERE key_hash = ? OR previous_hash = ?', [hash, hash]);
  }

  apiKeys(filter: { workspaceId?: string | null; type?: string; userId?: string }, page: Page): Promise<Paged<ApiKeyRow>> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.workspaceId !== undefined) {
      where.push(filter.workspaceId === null ? 'workspace_id IS NULL' : 'workspace_id = ?');
      if (filter.workspaceId !== null) params.push(filter.workspaceId);
    }
    if (filter.type !== undefined) {
      where.push('type = ?');
      params.push(filter.type);
    }
    if (filter.userId !== undefined) {
      where.push('user_id = ?');
      params.push(filter.userId);
    }
    return this.#paged<ApiKeyRow>(`FROM cp_api_keys${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`, params, 'created_at, id', page);
  }

  async deleteApiKey(id: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_api_keys WHERE id = ?', [id])).changes > 0;
  }

  async countApiKeys(client = this.db()): Promise<number> {
    return Number((await client.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM cp_api_keys', []))?.n ?? 0);
  }

  // Integrations

  integration(idOrSlug: string): Promise<IntegrationRow | undefined> {
    return this.#get<IntegrationRow>('SELECT * FROM cp_integrations WHERE id = ? OR slug = ?', [idOrSlug, idOrSlug]);
  }

  /** Integrations a workspace may see: its own and the organisation-wide ones (all, for `null`). */
  integrations(workspaceId: string | null, page: Page): Promise<Paged<IntegrationRow>> {
    return workspaceId === null
      ? this.#paged<IntegrationRow>('FROM cp_integrations', [], 'created_at, id', page)
      : this.#paged<IntegrationRow>('FROM cp_integrations WHERE workspace_id IS NULL OR workspace_id = ?', [workspaceId], 'created_at, id', page);
  }

  async deleteIntegration(id: string): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_integration_models WHERE integration_id = ?', [id]);
      await tx.run('DELETE FROM cp_integrations WHERE id = ?', [id]);
    });
  }

  integrationModels(integrationId: string): Promise<IntegrationModelRow[]> {
    return this.#all<IntegrationModelRow>('SELECT * FROM cp_integration_models WHERE integration_id = ? ORDER BY slug', [integrationId]);
  }

  /** Replaces the integration's model list in one transaction. */
  async setIntegrationModels(integrationId: string, rows: IntegrationModelRow[]): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_integration_models WHERE integration_id = ?', [integrationId]);
      for (const row of rows) await this.insert('cp_integration_models', row as unknown as Record<string, unknown>, tx);
    });
  }

  async providersUsingIntegration(integrationId: string): Promise<number> {
    return Number((await this.db().get<{ n: number | string }>('SELECT COUNT(*) AS n FROM cp_providers WHERE integration_id = ?', [integrationId]))?.n ?? 0);
  }

  // Providers (slugs, virtual keys)

  provider(workspaceId: string, idOrSlug: string): Promise<ProviderRow | undefined> {
    return this.#get<ProviderRow>('SELECT * FROM cp_providers WHERE workspace_id = ? AND (id = ? OR slug = ?)', [workspaceId, idOrSlug, idOrSlug]);
  }

  /** Any workspace's provider by id: for organisation keys. */
  providerById(id: string): Promise<ProviderRow | undefined> {
    return this.#get<ProviderRow>('SELECT * FROM cp_providers WHERE id = ?', [id]);
  }

  providers(workspaceId: string, page: Page): Promise<Paged<ProviderRow>> {
    return this.#paged<ProviderRow>('FROM cp_providers WHERE workspace_id = ?', [workspaceId], 'created_at, id', page);
  }

  /** Active providers of a workspace with their integrations, for `GET /models`. */
  providersWithIntegrations(workspaceId: string): Promise<Array<ProviderRow & { integration_provider: string }>> {
    return this.#all(
      "SELECT p.*, i.provider AS integration_provider FROM cp_providers p JOIN cp_integrations i ON i.id = p.integration_id WHERE p.workspace_id = ? AND p.status = 'active' AND i.status = 'active' ORDER BY p.slug",
      [workspaceId],
    );
  }

  async deleteProvider(id: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_providers WHERE id = ?', [id])).changes > 0;
  }

  // Configs

  config(workspaceId: string | null, idOrSlug: string, client = this.db()): Promise<ConfigRow | undefined> {
    return workspaceId === null
      ? this.#get<ConfigRow>('SELECT * FROM cp_configs WHERE id = ?', [idOrSlug], client)
      : this.#get<ConfigRow>('SELECT * FROM cp_configs WHERE workspace_id = ? AND (id = ? OR slug = ?)', [workspaceId, idOrSlug, idOrSlug], client);
  }

  configs(workspaceId: string, page: Page): Promise<Paged<ConfigRow>> {
    return this.#paged<ConfigRow>('FROM cp_configs WHERE workspace_id = ?', [workspaceId], 'created_at, id', page);
  }

  configVersion(configId: string, version: number, client = this.db()): Promise<ConfigVersionRow | undefined> {
    return this.#get<ConfigVersionRow>('SELECT * FROM cp_config_versions WHERE config_id = ? AND version = ?', [configId, version], client);
  }

  configVersions(configId: string): Promise<ConfigVersionRow[]> {
    return this.#all<ConfigVersionRow>('SELECT * FROM cp_config_versions WHERE config_id = ? ORDER BY version DESC', [configId]);
  }

  // Limit policies

  limitPolicy(kind: LimitPolicyRow['kind'], id: string): Promise<LimitPolicyRow | undefined> {
    return this.#get<LimitPolicyRow>('SELECT * FROM cp_limit_policies WHERE kind = ? AND id = ?', [kind, id]);
  }

  limitPolicies(
    kind: LimitPolicyRow['kind'],
    filter: { workspaceId: string | null; status?: string; type?: string; unit?: string; periodicReset?: string },
    page: Page,
  ): Promise<Paged<LimitPolicyRow>> {
    const where = ['kind = ?'];
    const params: unknown[] = [kind];
    const add = (column: string, value: string | null | undefined) => {
      if (value === undefined || value === null) return;
      where.push(`${column} = ?`);
      params.push(value);
    };
    add('workspace_id', filter.workspaceId);
    add('status', filter.status);
    add('type', filter.type);
    add('unit', filter.unit);
    add('periodic_reset', filter.periodicReset);
    return this.#paged<LimitPolicyRow>(`FROM cp_limit_policies WHERE ${where.join(' AND ')}`, params, 'created_at, id', page);
  }

  /** A workspace's active policies of both kinds, oldest first (the order they are checked in). */
  activeLimitPolicies(workspaceId: string): Promise<LimitPolicyRow[]> {
    return this.#all<LimitPolicyRow>("SELECT * FROM cp_limit_policies WHERE workspace_id = ? AND status = 'active' ORDER BY created_at, id", [workspaceId]);
  }

  // Prompts and partials. By id a row of any status; by slug (name) only an active one, since archiving frees it.

  prompt(workspaceId: string | null, idOrSlug: string): Promise<PromptRow | undefined> {
    return workspaceId === null
      ? this.#get<PromptRow>('SELECT * FROM cp_prompts WHERE id = ?', [idOrSlug])
      : this.#get<PromptRow>("SELECT * FROM cp_prompts WHERE workspace_id = ? AND (id = ? OR (slug = ? AND status = 'active'))", [workspaceId, idOrSlug, idOrSlug]);
  }

  prompts(workspaceId: string, statuses: readonly string[], page: Page): Promise<Paged<PromptRow>> {
    return this.#paged<PromptRow>(
      `FROM cp_prompts WHERE workspace_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [workspaceId, ...statuses],
      'created_at, id',
      page,
    );
  }

  promptVersion(promptId: string, version: number, client = this.db()): Promise<PromptVersionRow | undefined> {
    return this.#get<PromptVersionRow>('SELECT * FROM cp_prompt_versions WHERE prompt_id = ? AND version = ?', [promptId, version], client);
  }

  promptVersions(promptId: string, page: Page): Promise<Paged<PromptVersionRow>> {
    return this.#paged<PromptVersionRow>('FROM cp_prompt_versions WHERE prompt_id = ?', [promptId], 'version DESC', page);
  }

  partial(workspaceId: string | null, idOrName: string): Promise<PartialRow | undefined> {
    return workspaceId === null
      ? this.#get<PartialRow>('SELECT * FROM cp_prompt_partials WHERE id = ?', [idOrName])
      : this.#get<PartialRow>("SELECT * FROM cp_prompt_partials WHERE workspace_id = ? AND (id = ? OR (name = ? AND status = 'active'))", [workspaceId, idOrName, idOrName]);
  }

  /** The workspace's active partial of this name (what `{{> name}}` includes). */
  activePartial(workspaceId: string, name: string): Promise<PartialRow | undefined> {
    return this.#get<PartialRow>("SELECT * FROM cp_prompt_partials WHERE workspace_id = ? AND name = ? AND status = 'active'", [workspaceId, name]);
  }

  partials(workspaceId: string, statuses: readonly string[], page: Page): Promise<Paged<PartialRow>> {
    return this.#paged<PartialRow>(
      `FROM cp_prompt_partials WHERE workspace_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [workspaceId, ...statuses],
      'created_at, id',
      page,
    );
  }

  partialVersion(partialId: string, version: number, client = this.db()): Promise<PartialVersionRow | undefined> {
    return this.#get<PartialVersionRow>('SELECT * FROM cp_prompt_partial_versions WHERE partial_id = ? AND version = ?', [partialId, version], client);
  }

  partialVersions(partialId: string, page: Page): Promise<Paged<PartialVersionRow>> {
    return this.#paged<PartialVersionRow>('FROM cp_prompt_partial_versions WHERE partial_id = ?', [partialId], 'version DESC', page);
  }

  // Stored guardrails

  /** A guardrail with its current entry: by id in any workspace (`null`), or by id or slug in one. */
  guardrail(workspaceId: string | null, idOrSlug: string, client = this.db()): Promise<GuardrailWithBody | undefined> {
    const head = 'SELECT g.*, v.body, v.sealed FROM cp_guardrails g JOIN cp_guardrail_versions v ON v.guardrail_id = g.id AND v.version = g.version';
    return workspaceId === null
      ? this.#get<GuardrailWithBody>(`${head} WHERE g.id = ?`, [idOrSlug], client)
      : this.#get<GuardrailWithBody>(`${head} WHERE g.workspace_id = ? AND (g.id = ? OR g.slug = ?)`, [workspaceId, idOrSlug, idOrSlug], client);
  }

  /** A workspace's guardrails with their current entries, optionally only these ids or one status. */
  guardrails(filter: { workspaceId: string; ids?: readonly string[]; status?: string }, page: Page): Promise<Paged<GuardrailWithBody>> {
    const where = ['g.workspace_id = ?'];
    const params: unknown[] = [filter.workspaceId];
    if (filter.ids !== undefined) {
      where.push(`g.id IN (${filter.ids.map(() => '?').join(', ')})`);
      params.push(...filter.ids);
    }
    if (filter.status !== undefined) {
      where.push('g.status = ?');
      params.push(filter.status);
    }
    return this.#paged<GuardrailWithBody>(
      `FROM cp_guardrails g JOIN cp_guardrail_versions v ON v.guardrail_id = g.id AND v.version = g.version WHERE ${where.join(' AND ')}`,
      params,
      'g.created_at, g.id',
      page,
      'g.*, v.body, v.sealed',
    );
  }

  guardrailVersions(guardrailId: string): Promise<GuardrailVersionRow[]> {
    return this.#all<GuardrailVersionRow>('SELECT * FROM cp_guardrail_versions WHERE guardrail_id = ? ORDER BY version DESC', [guardrailId]);
  }

  async deleteConfig(id: string): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_config_versions WHERE config_id = ?', [id]);
      await tx.run('DELETE FROM cp_configs WHERE id = ?', [id]);
    });
  }
}
