import type { SqlClient } from '../../../sdk/index.js';
import { SqlTables, type Page, type Paged } from '../../../sdk/admin/index.js';

/** Rows as stored. JSON columns are TEXT; times are epoch ms. */
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

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'enabled', 'pricing_multiplier']);

/**
 * The statements of integrations, their models and the provider slugs of
 * workspaces, against either SQL store (the control plane's, through
 * `Identity.sql()`). Column and table names come from this file only; values
 * always go as parameters.
 */
export class IntegrationRepository {
  readonly tables: SqlTables;

  constructor(readonly db: () => SqlClient) {
    this.tables = new SqlTables(db, NUMERIC);
  }

  insert(table: 'cp_integrations' | 'cp_providers', row: Record<string, unknown>): Promise<void> {
    return this.tables.insert(table, row);
  }

  update(table: 'cp_integrations' | 'cp_providers', where: Record<string, unknown>, patch: Record<string, unknown>): Promise<number> {
    return this.tables.update(table, where, patch);
  }

  // Integrations

  integration(idOrSlug: string): Promise<IntegrationRow | undefined> {
    return this.tables.get<IntegrationRow>('SELECT * FROM cp_integrations WHERE id = ? OR slug = ?', [idOrSlug, idOrSlug]);
  }

  /** Integrations a workspace may see: its own and the organisation-wide ones (all, for `null`). */
  integrations(workspaceId: string | null, page: Page): Promise<Paged<IntegrationRow>> {
    return workspaceId === null
      ? this.tables.paged<IntegrationRow>('FROM cp_integrations', [], 'created_at, id', page)
      : this.tables.paged<IntegrationRow>('FROM cp_integrations WHERE workspace_id IS NULL OR workspace_id = ?', [workspaceId], 'created_at, id', page);
  }

  async deleteIntegration(id: string): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_integration_models WHERE integration_id = ?', [id]);
      await tx.run('DELETE FROM cp_integrations WHERE id = ?', [id]);
    });
  }

  integrationModels(integrationId: string): Promise<IntegrationModelRow[]> {
    return this.tables.all<IntegrationModelRow>('SELECT * FROM cp_integration_models WHERE integration_id = ? ORDER BY slug', [integrationId]);
  }

  /** Replaces the integration's model list in one transaction. */
  async setIntegrationModels(integrationId: string, rows: IntegrationModelRow[]): Promise<void> {
    await this.db().transaction(async (tx) => {
      await tx.run('DELETE FROM cp_integration_models WHERE integration_id = ?', [integrationId]);
      for (const row of rows) await this.tables.insert('cp_integration_models', row as unknown as Record<string, unknown>, tx);
    });
  }

  async providersUsingIntegration(integrationId: string): Promise<number> {
    return Number((await this.db().get<{ n: number | string }>('SELECT COUNT(*) AS n FROM cp_providers WHERE integration_id = ?', [integrationId]))?.n ?? 0);
  }

  // Providers (slugs, virtual keys)

  provider(workspaceId: string, idOrSlug: string): Promise<ProviderRow | undefined> {
    return this.tables.get<ProviderRow>('SELECT * FROM cp_providers WHERE workspace_id = ? AND (id = ? OR slug = ?)', [workspaceId, idOrSlug, idOrSlug]);
  }

  /** Any workspace's provider by id: for organisation keys. */
  providerById(id: string): Promise<ProviderRow | undefined> {
    return this.tables.get<ProviderRow>('SELECT * FROM cp_providers WHERE id = ?', [id]);
  }

  providers(workspaceId: string, page: Page): Promise<Paged<ProviderRow>> {
    return this.tables.paged<ProviderRow>('FROM cp_providers WHERE workspace_id = ?', [workspaceId], 'created_at, id', page);
  }

  /** Active providers of a workspace with their integrations, for `GET /models`. */
  providersWithIntegrations(workspaceId: string): Promise<Array<ProviderRow & { integration_provider: string }>> {
    return this.tables.all(
      "SELECT p.*, i.provider AS integration_provider FROM cp_providers p JOIN cp_integrations i ON i.id = p.integration_id WHERE p.workspace_id = ? AND p.status = 'active' AND i.status = 'active' ORDER BY p.slug",
      [workspaceId],
    );
  }

  async deleteProvider(id: string): Promise<boolean> {
    return (await this.db().run('DELETE FROM cp_providers WHERE id = ?', [id])).changes > 0;
  }
}
