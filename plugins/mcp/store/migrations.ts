import type { Migration } from '../../../sdk/index.js';
import { upstreamServerTable } from '../../../sdk/admin/index.js';

/** Migration namespace of MCP servers of workspaces, users' connections (sealed tokens) and MCP sessions. */
export const MCP_SERVER_NAMESPACE = 'mcp';

/**
 * MCP servers of workspaces, users' connections (sealed tokens) and MCP sessions.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const MCP_SERVER_MIGRATIONS: readonly Migration[] = [
  {
    // MCP servers of a workspace (archived, never deleted: the log keeps naming their ids in its paths), each
    // user's connection to one (their OAuth tokens, sealed), and the sessions the MCP gateway opened on a
    // connection (the session id as a SHA-256 digest, the upstream's own session id sealed).
    version: 1,
    name: 'mcp_servers',
    adopts: { namespace: 'control-plane', version: 7 },
    up: `${upstreamServerTable(
      'cp_mcp_servers',
      `oauth TEXT,
  allowed_tools TEXT,
  guardrails TEXT,
  request_timeout_ms INTEGER,`,
    )};
CREATE TABLE cp_mcp_connections (
  id TEXT PRIMARY KEY,
  mcp_server_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  user_id TEXT,
  api_key_id TEXT,
  tokens TEXT,
  token_expires_at BIGINT,
  token_scope TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  last_used_at BIGINT,
  UNIQUE (mcp_server_id, subject)
);
CREATE TABLE cp_mcp_sessions (
  id TEXT PRIMARY KEY,
  connection_id TEXT NOT NULL,
  mcp_server_id TEXT NOT NULL,
  api_key_id TEXT NOT NULL,
  upstream_session TEXT,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT NOT NULL
);
CREATE INDEX cp_mcp_sessions_connection ON cp_mcp_sessions (connection_id);
CREATE INDEX cp_mcp_sessions_used ON cp_mcp_sessions (last_used_at)`,
  },
  {
    // A session whose upstream speaks only MCP 2026-07-28 (stateless): the capabilities and identity its client
    // declared at initialize, as JSON, which the gateway puts in every request it forwards (null: the upstream
    // keeps sessions of its own, as before).
    version: 2,
    name: 'mcp_session_envelope',
    up: 'ALTER TABLE cp_mcp_sessions ADD COLUMN client_envelope TEXT',
  },
];
