import type { SqlClient } from '../../../sdk/index.js';
import { SqlTables, UpstreamServerTable, type UpstreamServerRow } from '../../../sdk/admin/index.js';

/** An agent as stored (table in `migrations.ts`); times are epoch ms. */
export interface AgentServerRow extends UpstreamServerRow {
  /** JSON: the last valid card fetched. */
  agent_card: string | null;
  agent_card_fetched_at: number | null;
}

/** Numeric columns come back as strings from pg for BIGINT; normalised once, by the tables helper. */
const NUMERIC: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'archived_at', 'request_timeout_ms', 'agent_card_fetched_at']);

/** The agents' table, against either SQL store. */
export function agentServerTable(db: () => SqlClient): UpstreamServerTable<AgentServerRow> {
  // The cached card can be large: a list shows whether there is one, GET …/agent-card shows it.
  const listColumns =
    'id, organisation_id, workspace_id, name, description, url, auth_type, auth_header, auth_secret, auth_masked, request_timeout_ms, NULL AS agent_card, agent_card_fetched_at, status, created_at, updated_at, archived_at';
  return new UpstreamServerTable<AgentServerRow>(new SqlTables(db, NUMERIC), 'cp_agent_servers', 'agent server', listColumns);
}
