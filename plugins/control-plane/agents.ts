import type { AgentCardEntry, AgentServerConfig, AgentServerStore, Logger, RequestContext, UpstreamClient } from '../../sdk/index.js';
import { fetchAgentCard, validateCard, type ValidCard } from './agent-cards.js';
import { TtlCache } from '../../sdk/admin/index.js';
import type { AgentServerRow, ControlPlaneRepository, WorkspaceRow } from './repository.js';
import type { SecretBox } from './secret-box.js';
import { openAuth } from '../../sdk/admin/index.js';

/** What the agent store needs of the control plane. */
export interface AgentStoreDeps {
  repo: ControlPlaneRepository;
  box: () => SecretBox;
  now: () => number;
  cacheTtlMs: number;
  /** How long a fetched card is served before it is fetched again. */
  cardTtlMs: number;
  workspace: (id: string) => WorkspaceRow | null | Promise<WorkspaceRow | null>;
  upstream: () => UpstreamClient;
  logger: () => Logger | undefined;
}

const MAX_CACHED = 10_000;
const serverAad = (id: string) => `agent-server:${id}`;

/** An agent row as the request path needs it. */
export function toAgentConfig(box: SecretBox, row: AgentServerRow): AgentServerConfig {
  return Object.freeze({
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    url: row.url,
    auth: openAuth(box, row, serverAad(row.id), `Agent "${row.name}"`),
    requestTimeoutMs: row.request_timeout_ms,
  });
}

interface StoredCard extends ValidCard {
  fetchedAt: number;
}

/**
 * The agents in the control plane's store and their cards. A card is kept in
 * the store (so every instance shares it) and served while younger than
 * `cardTtlMs`; then it is fetched again, one fetch per agent at a time.
 */
export class AgentStore implements AgentServerStore {
  readonly #deps: AgentStoreDeps;
  readonly #servers: TtlCache<AgentServerConfig | null>;
  readonly #cards: TtlCache<StoredCard | null>;
  readonly #fetching = new Map<string, Promise<AgentCardEntry>>();

  constructor(deps: AgentStoreDeps) {
    this.#deps = deps;
    this.#servers = new TtlCache(deps.cacheTtlMs, MAX_CACHED, deps.now);
    this.#cards = new TtlCache(deps.cacheTtlMs, MAX_CACHED, deps.now);
  }

  clear(): void {
    this.#servers.clear();
    this.#cards.clear();
  }

  async server(ctx: RequestContext, id: string): Promise<AgentServerConfig | undefined> {
    const config = await this.#servers.get(id, async () => {
      const row = await this.#deps.repo.agentServer(id);
      return row === undefined || row.status !== 'active' ? null : toAgentConfig(this.#deps.box(), row);
    });
    if (config === null) return undefined;
    const own = ctx.auth?.workspaceId ?? null;
    if (own !== null && own !== config.workspaceId) return undefined;
    const ws = await this.#deps.workspace(config.workspaceId);
    return ws !== null && ws.status === 'active' ? config : undefined;
  }

  async card(server: AgentServerConfig, options: { refresh?: boolean; staleOk?: boolean } = {}): Promise<AgentCardEntry> {
    const stored = await this.#cards.get(server.id, async () => {
      const row = await this.#deps.repo.agentServer(server.id);
      if (row?.agent_card == null || row.agent_card_fetched_at === null) return null;
      try {
        return { ...validateCard(JSON.parse(row.agent_card), server.name), fetchedAt: row.agent_card_fetched_at };
      } catch {
        return null; // A card stored by an older gateway that this one finds invalid: fetch it again.
      }
    });
    if (stored !== null && options.refresh !== true && this.#deps.now() - stored.fetchedAt < this.#deps.cardTtlMs) return { ...stored, cache: 'HIT' };
    // One fetch per agent at a time: concurrent callers share it (bounded by the card timeout, not by one caller's signal).
    let pending = this.#fetching.get(server.id);
    if (pending === undefined) {
      pending = this.#fetch(server, stored === null ? 'MISS' : 'REFRESH').finally(() => this.#fetching.delete(server.id));
      this.#fetching.set(server.id, pending);
    }
    try {
      return await pending;
    } catch (err) {
      if (options.staleOk === true && stored !== null) {
        this.#deps.logger()?.warn({ err, agent_server_id: server.id }, 'refreshing an agent card failed; the cached card is used');
        return { ...stored, cache: 'STALE' };
      }
      throw err;
    }
  }

  async #fetch(server: AgentServerConfig, cache: 'MISS' | 'REFRESH'): Promise<AgentCardEntry> {
    const valid = await fetchAgentCard(this.#deps.upstream(), server);
    const fetchedAt = this.#deps.now();
    await this.#deps.repo.update('cp_agent_servers', { id: server.id }, { agent_card: JSON.stringify(valid.card), agent_card_fetched_at: fetchedAt });
    this.#cards.delete(server.id);
    return { ...valid, fetchedAt, cache };
  }
}
