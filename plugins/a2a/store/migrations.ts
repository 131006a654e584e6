import type { Migration } from '../../../sdk/index.js';
import { upstreamServerTable } from '../../../sdk/admin/index.js';

/** Migration namespace of A2A agents of workspaces and their last agent card. */
export const AGENT_SERVER_NAMESPACE = 'agents';

/**
 * A2A agents of workspaces and their last agent card.
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const AGENT_SERVER_MIGRATIONS: readonly Migration[] = [
  {
    // A2A agents of a workspace, with the last agent card fetched from each (JSON) and when.
    version: 1,
    name: 'agent_servers',
    adopts: { namespace: 'control-plane', version: 8 },
    up: upstreamServerTable(
      'cp_agent_servers',
      `request_timeout_ms INTEGER,
  agent_card TEXT,
  agent_card_fetched_at BIGINT,`,
    ),
  },
];
