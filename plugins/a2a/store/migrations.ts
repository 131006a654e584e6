import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of A2A agents of workspaces and their last agent card. */
export const AGENT_SERVER_NAMESPACE = 'agents';

/**
 * A2A agents of workspaces and their last agent card.
 * One text for both dialects (portable types only; JSON as TEXT, booleans 0/1, times as epoch ms).
 * Each version adopts the control-plane migration that made the same change before these tables had an
 * owner of their own (`Migration.adopts`): a database from before keeps its tables and rows, a new one gets
 * them from here.
 */
export const AGENT_SERVER_MIGRATIONS: readonly Migration[] = [
  {
    // A2A agents of a workspace, with the last agent card fetched from each (JSON) and when.
    version: 1,
    name: 'agent_servers',
    adopts: { namespace: 'control-plane', version: 8 },
    up: `
CREATE TABLE cp_agent_servers (
  id TEXT PRIMARY KEY,
  organisation_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  url TEXT NOT NULL,
  auth_type TEXT NOT NULL,
  auth_header TEXT,
  auth_secret TEXT,
  auth_masked TEXT,
  request_timeout_ms INTEGER,
  agent_card TEXT,
  agent_card_fetched_at BIGINT,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  archived_at BIGINT
);
CREATE INDEX cp_agent_servers_workspace ON cp_agent_servers (workspace_id, status)`,
  },
];
