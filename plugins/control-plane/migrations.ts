import type { Migration } from '../../sdk/index.js';

/** Migration namespace of identity: the organisation, its workspaces, users and members, and API keys (SHA-256 digests only). */
export const IDENTITY_NAMESPACE = 'identity';

/**
 * Identity: the organisation, its workspaces, users and members, and API keys (SHA-256 digests only).
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const IDENTITY_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'identity',
    adopts: { namespace: 'control-plane', version: 1 },
    up: `
CREATE TABLE cp_organisations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  settings TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE cp_workspaces (
  id TEXT PRIMARY KEY,
  organisation_id TEXT NOT NULL,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT,
  status TEXT NOT NULL,
  metadata TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
);
CREATE TABLE cp_users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  name TEXT,
  role TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE cp_members (
  workspace_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  role TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, user_id)
);
CREATE TABLE cp_api_keys (
  id TEXT PRIMARY KEY,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT,
  user_id TEXT,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  scopes TEXT NOT NULL,
  status TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  key_mask TEXT NOT NULL,
  previous_hash TEXT,
  previous_expires_at BIGINT,
  rotation_policy TEXT,
  last_rotated_at BIGINT,
  expires_at BIGINT,
  metadata TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX cp_api_keys_previous ON cp_api_keys (previous_hash);
CREATE INDEX cp_api_keys_workspace ON cp_api_keys (workspace_id)`,
  },
];

/** The namespace every control-plane table was migrated under before features owned theirs: adopted, never run again. */
export const LEGACY_NAMESPACE = 'control-plane';
