import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of saved configs of workspaces and their versions (credentials sealed). */
export const SAVED_CONFIGS_NAMESPACE = 'configs';

/**
 * Saved configs of workspaces and their versions (credentials sealed).
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
export const SAVED_CONFIGS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'configs',
    adopts: { namespace: 'control-plane', version: 1 },
    up: `
CREATE TABLE cp_configs (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (workspace_id, slug)
);
CREATE TABLE cp_config_versions (
  config_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (config_id, version)
)`,
  },
  {
    // A saved config's credentials (target fields declared `credential`, checks' credential parameters), sealed:
    // the body keeps each one masked, `sealed` holds them encrypted (sdk/sealed-json.ts; '' when a version has
    // none). NULL marks a version written before, sealed at the next start (DocumentStore.ready, sdk/admin).
    version: 2,
    name: 'sealed_documents',
    adopts: { namespace: 'control-plane', version: 9 },
    up: `
ALTER TABLE cp_config_versions ADD COLUMN sealed TEXT`,
  },
];
