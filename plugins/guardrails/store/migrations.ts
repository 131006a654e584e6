import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of stored guardrails of workspaces and their versions (credentials sealed). */
export const STORED_GUARDRAILS_NAMESPACE = 'guardrails';

/**
 * Stored guardrails of workspaces and their versions (credentials sealed).
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
export const STORED_GUARDRAILS_MIGRATIONS: readonly Migration[] = [
  {
    // Stored guardrails of a workspace: a name and a guardrail entry of the config object, versioned like saved
    // configs (each change of the entry is a new version). Archived, never deleted: configs keep naming their ids.
    version: 1,
    name: 'guardrails',
    adopts: { namespace: 'control-plane', version: 4 },
    up: `
CREATE TABLE cp_guardrails (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT,
  UNIQUE (workspace_id, slug)
);
CREATE TABLE cp_guardrail_versions (
  guardrail_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (guardrail_id, version)
)`,
  },
  {
    // A stored guardrail's credentials (a webhook check's headers), sealed: the entry keeps each one masked, `sealed`
    // holds them encrypted (sdk/sealed-json.ts; '' when a version has none). NULL marks a version written before,
    // sealed at the next start (DocumentStore.ready, sdk/admin).
    version: 2,
    name: 'sealed_documents',
    adopts: { namespace: 'control-plane', version: 9 },
    up: `
ALTER TABLE cp_guardrail_versions ADD COLUMN sealed TEXT`,
  },
];
