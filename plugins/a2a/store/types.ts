import type { RequestContext } from '../../../sdk/index.js';
import type { UpstreamServerConfig } from '../../../sdk/admin/index.js';

/*
 * The shapes the A2A gateway (`index.ts`) and the store of agents and their
 * cards (`store/`) share.
 */

/** An A2A agent registered in a workspace (`url`: its base URL, its card at its well-known path, or its card's URL). */
export type AgentServerConfig = UpstreamServerConfig;

/** A validated agent card and what the gateway reads from it. */
export interface AgentCardEntry {
  /** The card as the agent serves it. */
  card: Record<string, unknown>;
  /** The agent's JSON-RPC endpoint (`url` of a v0.3 card, or its JSONRPC interface). */
  endpoint: string;
  /** `capabilities.streaming`. */
  streaming: boolean;
  fetchedAt: number;
  /** `HIT`: cached and fresh; `MISS`: fetched (none cached); `REFRESH`: fetched again (stale, or asked); `STALE`: kept after a failed refresh. */
  cache: 'HIT' | 'MISS' | 'REFRESH' | 'STALE';
}

/** The stored agent servers and their cached cards, as the A2A gateway uses them (the store is `store/store.ts`). */
export interface AgentServerStore {
  /** The active agent `id` the caller may use; undefined otherwise. */
  server(ctx: RequestContext, id: string): Promise<AgentServerConfig | undefined>;
  /**
   * The agent's card: cached while fresh, else fetched, validated and cached.
   * `refresh` fetches it whatever its age; `staleOk` keeps serving a cached card when fetching fails.
   * @throws GatewayError when the card cannot be fetched or is invalid (and no stale card may serve).
   */
  card(server: AgentServerConfig, options?: { refresh?: boolean; staleOk?: boolean }): Promise<AgentCardEntry>;
}
