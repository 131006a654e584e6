import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of stored prompts and partials of workspaces, and their versions. */
export const STORED_PROMPTS_NAMESPACE = 'prompts';

/**
 * Stored prompts and partials of workspaces, and their versions.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
/** What prompts and partials both keep: a status, the latest and the published version, when made, changed, archived. */
const RELEASED = `status TEXT NOT NULL,
  latest_version INTEGER NOT NULL,
  published_version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT`;

export const STORED_PROMPTS_MIGRATIONS: readonly Migration[] = [
  {
    // Stored prompts and the partials they include, each with numbered versions (never changed once
    // written) and a published one. Archived, never deleted: the log keeps naming a prompt's id and
    // version. A slug (a partial's name) is unique among the workspace's active ones only, so
    // archiving frees it; both dialects take a partial unique index.
    version: 1,
    name: 'prompts',
    adopts: { namespace: 'control-plane', version: 3 },
    up: `
CREATE TABLE cp_prompts (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  ${RELEASED}
);
CREATE UNIQUE INDEX cp_prompts_active_slug ON cp_prompts (workspace_id, slug) WHERE status = 'active';
CREATE INDEX cp_prompts_workspace ON cp_prompts (workspace_id, status, created_at);
CREATE TABLE cp_prompt_versions (
  prompt_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  body TEXT NOT NULL,
  partials TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (prompt_id, version)
);
CREATE TABLE cp_prompt_partials (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  ${RELEASED}
);
CREATE UNIQUE INDEX cp_prompt_partials_active_name ON cp_prompt_partials (workspace_id, name) WHERE status = 'active';
CREATE TABLE cp_prompt_partial_versions (
  partial_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  content TEXT NOT NULL,
  description TEXT,
  partials TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (partial_id, version)
)`,
  },
];
