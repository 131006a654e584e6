import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of integrations (provider credentials, sealed), their models, and the provider slugs of workspaces. */
export const INTEGRATIONS_NAMESPACE = 'integrations';

/**
 * Integrations (provider credentials, sealed), their models, and the provider slugs of workspaces.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const INTEGRATIONS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'integrations',
    adopts: { namespace: 'control-plane', version: 1 },
    up: `
CREATE TABLE cp_integrations (
  id TEXT PRIMARY KEY,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT,
  provider TEXT NOT NULL,
  status TEXT NOT NULL,
  secret TEXT,
  masked TEXT NOT NULL,
  configurations TEXT NOT NULL,
  secret_mappings TEXT,
  pricing_multiplier DOUBLE PRECISION,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE cp_integration_models (
  integration_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  configurations TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (integration_id, slug)
);
CREATE TABLE cp_providers (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  integration_id TEXT NOT NULL,
  note TEXT,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (workspace_id, slug)
);
CREATE INDEX cp_providers_integration ON cp_providers (integration_id)`,
  },
];
