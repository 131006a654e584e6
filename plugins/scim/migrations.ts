import type { Migration } from '../../sdk/index.js';

/** Migration namespace of SCIM 2.0 provisioning: tokens (digests), users and groups an identity provider pushes, group to workspace mappings. */
export const SCIM_NAMESPACE = 'scim';

/**
 * SCIM 2.0 provisioning: tokens (digests), users and groups an identity provider pushes, group to workspace mappings.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const SCIM_MIGRATIONS: readonly Migration[] = [
  {
    // SCIM 2.0 provisioning: bearer tokens (SHA-256 digests only), the users and groups an identity provider
    // pushes, group -> workspace mappings, which memberships SCIM manages (so it never touches one added through
    // the admin API), and the user keys it disabled (so re-adding the person turns those back on).
    version: 1,
    name: 'scim',
    adopts: { namespace: 'control-plane', version: 5 },
    up: `
CREATE TABLE cp_scim_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  token_mask TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE TABLE cp_scim_users (
  user_id TEXT PRIMARY KEY,
  user_name TEXT NOT NULL,
  user_name_key TEXT NOT NULL UNIQUE,
  external_id TEXT,
  active INTEGER NOT NULL,
  given_name TEXT,
  family_name TEXT,
  display_name TEXT,
  emails TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX cp_scim_users_external ON cp_scim_users (external_id);
CREATE TABLE cp_scim_groups (
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  display_name_key TEXT NOT NULL,
  external_id TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX cp_scim_groups_name ON cp_scim_groups (display_name_key);
CREATE INDEX cp_scim_groups_external ON cp_scim_groups (external_id);
CREATE TABLE cp_scim_group_members (
  group_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX cp_scim_group_members_user ON cp_scim_group_members (user_id);
CREATE TABLE cp_scim_workspace_mappings (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  role TEXT NOT NULL,
  scim_group_id TEXT,
  scim_group_name TEXT,
  scim_group_name_key TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX cp_scim_workspace_mappings_workspace ON cp_scim_workspace_mappings (workspace_id);
CREATE TABLE cp_scim_memberships (
  workspace_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, user_id)
);
CREATE TABLE cp_scim_suspended_keys (
  key_id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  workspace_id TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX cp_scim_suspended_keys_user ON cp_scim_suspended_keys (user_id)`,
  },
];
