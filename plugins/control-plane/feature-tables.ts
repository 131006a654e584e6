import type { Migration } from '../../sdk/index.js';

/*
 * The tables of features that still live in the control plane while they move to plugins of their own (one
 * block each; a feature that moves takes its block with it, to `<its plugin>/…/migrations.ts`, and runs it
 * from there). Each block is its feature's namespace and migrations, adopting the control-plane migrations
 * that made those tables before (`Migration.adopts`).
 */

// ---- integrations ----
/** Migration namespace of integrations (provider credentials, sealed), their models, and the provider slugs of workspaces. */
export const INTEGRATIONS_NAMESPACE = 'integrations';

/**
 * Integrations (provider credentials, sealed), their models, and the provider slugs of workspaces.
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
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

// ---- configs ----
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
    // Credentials inside saved configs and stored guardrails, sealed: the body keeps each one masked, `sealed`
    // holds them encrypted (sdk/sealed-json.ts; '' when a version has none). NULL marks a version written before,
    // sealed at the next start (sealLegacyDocuments).
    version: 2,
    name: 'sealed_documents',
    adopts: { namespace: 'control-plane', version: 9 },
    up: `
ALTER TABLE cp_config_versions ADD COLUMN sealed TEXT`,
  },
];

// ---- limit-policies ----
/** Migration namespace of rate-limit and usage-limit policies of workspaces. */
export const LIMIT_POLICIES_NAMESPACE = 'limit-policies';

/**
 * Rate-limit and usage-limit policies of workspaces.
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
export const LIMIT_POLICIES_MIGRATIONS: readonly Migration[] = [
  {
    // Rate limits (kind 'rate': type, unit, value) and budgets (kind 'usage': type, credit_limit, the reset
    // rule and its anchor) of a workspace. Archived, never deleted: the log keeps naming their ids.
    version: 1,
    name: 'limit_policies',
    adopts: { namespace: 'control-plane', version: 2 },
    up: `
CREATE TABLE cp_limit_policies (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  unit TEXT,
  value BIGINT,
  credit_limit DOUBLE PRECISION,
  alert_threshold DOUBLE PRECISION,
  periodic_reset TEXT,
  periodic_reset_days INTEGER,
  next_usage_reset_at BIGINT,
  period_start_at BIGINT,
  conditions TEXT NOT NULL,
  group_by TEXT NOT NULL,
  fail_open INTEGER NOT NULL,
  status TEXT NOT NULL,
  managed_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
);
CREATE INDEX cp_limit_policies_workspace ON cp_limit_policies (workspace_id, kind, status)`,
  },
];

// ---- prompts ----
/** Migration namespace of stored prompts and partials of workspaces, and their versions. */
export const STORED_PROMPTS_NAMESPACE = 'prompts';

/**
 * Stored prompts and partials of workspaces, and their versions.
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
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
  status TEXT NOT NULL,
  latest_version INTEGER NOT NULL,
  published_version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
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
  status TEXT NOT NULL,
  latest_version INTEGER NOT NULL,
  published_version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
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

// ---- guardrails ----
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
    // Credentials inside saved configs and stored guardrails, sealed: the body keeps each one masked, `sealed`
    // holds them encrypted (sdk/sealed-json.ts; '' when a version has none). NULL marks a version written before,
    // sealed at the next start (sealLegacyDocuments).
    version: 2,
    name: 'sealed_documents',
    adopts: { namespace: 'control-plane', version: 9 },
    up: `
ALTER TABLE cp_guardrail_versions ADD COLUMN sealed TEXT`,
  },
];

// ---- scim ----
/** Migration namespace of sCIM 2.0 provisioning: tokens (digests), users and groups an identity provider pushes, group to workspace mappings. */
export const SCIM_NAMESPACE = 'scim';

/**
 * SCIM 2.0 provisioning: tokens (digests), users and groups an identity provider pushes, group to workspace mappings.
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
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

// ---- sso ----
/** Migration namespace of single sign-on sessions of people (the cookie secret as a SHA-256 digest). */
export const SSO_NAMESPACE = 'sso';

/**
 * Single sign-on sessions of people (the cookie secret as a SHA-256 digest).
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
export const SSO_MIGRATIONS: readonly Migration[] = [
  {
    // Single sign-on sessions of people: the cookie's secret as a SHA-256 digest, the user, when the sign-in
    // happened (max_session_ttl counts from it) and when the session ends at the latest.
    version: 1,
    name: 'sessions',
    adopts: { namespace: 'control-plane', version: 6 },
    up: `
CREATE TABLE cp_sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX cp_sessions_user ON cp_sessions (user_id);
CREATE INDEX cp_sessions_expires ON cp_sessions (expires_at)`,
  },
];

/** Every feature table still migrated by the control plane, by namespace. */
export const FEATURE_TABLES: ReadonlyArray<{ namespace: string; migrations: readonly Migration[] }> = [
  { namespace: INTEGRATIONS_NAMESPACE, migrations: INTEGRATIONS_MIGRATIONS },
  { namespace: SAVED_CONFIGS_NAMESPACE, migrations: SAVED_CONFIGS_MIGRATIONS },
  { namespace: LIMIT_POLICIES_NAMESPACE, migrations: LIMIT_POLICIES_MIGRATIONS },
  { namespace: STORED_PROMPTS_NAMESPACE, migrations: STORED_PROMPTS_MIGRATIONS },
  { namespace: STORED_GUARDRAILS_NAMESPACE, migrations: STORED_GUARDRAILS_MIGRATIONS },
  { namespace: SCIM_NAMESPACE, migrations: SCIM_MIGRATIONS },
  { namespace: SSO_NAMESPACE, migrations: SSO_MIGRATIONS },
];
