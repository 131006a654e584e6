import type { Logger, RequestContext, SecretBox, UpstreamClient } from '../../../sdk/index.js';
import { openServer, TtlCache, type Identity, type UpstreamServerService, type UpstreamServerTable } from '../../../sdk/admin/index.js';
import { fetchAgentCard, validateCard, type ValidCard } from './agent-cards.js';
import type { AgentServerRow } from './repository.js';
import type { AgentCardEntry, AgentServerConfig, AgentServerStore } from './types.js';

/** What the agent store needs. */
export interface AgentStoreDeps {
  /** Workspaces, the store, the encryption key, the clock and the caches' lifetime (the control plane's). */
  identity: Identity;
  servers: UpstreamServerTable<AgentServerRow>;
  /** How long a fetched card is served before it is fetched again (the plugin's `agentCardTtlMs`). */
  cardTtlMs: number;
  /** The pooled client: cards are fetched through it, URLs checked against the outbound host policy. */
  upstream: UpstreamClient;
  logger: Logger;
}

const MAX_CACHED = 10_000;
const serverAad = (id: string) => `agent-server:${id}`;

/** An agent row as the request path needs it. */
export function toAgentConfig(box: SecretBox, row: AgentServerRow): AgentServerConfig {
  return Object.freeze(openServer(box, row, serverAad(row.id), `Agent "${row.name}"`));
}

interface StoredCard extends ValidCard {
  fetchedAt: number;
}

/**
 * The agents in the store the control plane opens, and their cards. A card is
 * kept in the store (so every instance shares it) and served while younger
 * than `cardTtlMs`; then it is fetched again, one fetch per agent at a time.
 * Caches clear on every admin write on this instance (`identity.onInvalidate`).
 * It is also the service of the admin routes (`routes.ts`).
 */
export class AgentStore implements AgentServerStore, UpstreamServerService<AgentServerRow> {
  readonly #deps: AgentStoreDeps;
  readonly #servers: TtlCache<AgentServerConfig | null>;
  readonly #cards: TtlCache<StoredCard | null>;
  readonly #fetching = new Map<string, Promise<AgentCardEntry>>();
  readonly identity: Identity;
  readonly upstream: UpstreamClient;
  readonly servers: UpstreamServerTable<AgentServerRow>;

  constructor(deps: AgentStoreDeps) {
    this.#deps = deps;
    this.identity = deps.identity;
    this.upstream = deps.upstream;
    this.servers = deps.servers;
    this.#servers = new TtlCache(deps.identity.cacheTtlMs, MAX_CACHED, () => deps.identity.now());
    this.#cards = new TtlCache(deps.identity.cacheTtlMs, MAX_CACHED, () => deps.identity.now());
  }

  clear(): void {
    this.#servers.clear();
    this.#cards.clear();
  }

  async server(ctx: RequestContext, id: string): Promise<AgentServerConfig | undefined> {
    const config = await this.#servers.get(id, async () => {
      const row = await this.#deps.servers.byId(id);
      return row === undefined || row.status !== 'active' ? null : toAgentConfig(this.#deps.identity.box, row);
    });
    if (config === null) return undefined;
    const own = ctx.auth?.workspaceId ?? null;
    if (own !== null && own !== config.workspaceId) return undefined;
    const ws = await this.#deps.identity.workspace(config.workspaceId);
    return ws !== null && ws.status === 'active' ? config : undefined;
  }

  async card(server: AgentServerConfig, options: { refresh?: boolean; staleOk?: boolean } = {}): Promise<AgentCardEntry> {
    const stored = await this.#cards.get(server.id, async () => {
      const row = await this.#deps.servers.byId(server.id);
      if (row?.agent_card == null || row.agent_card_fetched_at === null) return null;
      try {
        return { ...validateCard(JSON.parse(row.agent_card), server.name), fetchedAt: row.agent_card_fetched_at };
      } catch {
        return null; // A card stored by an older gateway that this one finds invalid: fetch it again.
      }
    });
    if (stored !== null && options.refresh !== true && this.#deps.identity.now() - stored.fetchedAt < this.#deps.cardTtlMs) return { ...stored, cache: 'HIT' };
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
        this.#deps.logger.warn({ err, agent_server_id: server.id }, 'refreshing an agent card failed; the cached card is used');
        return { ...stored, cache: 'STALE' };
      }
      throw err;
    }
  }

  async #fetch(server: AgentServerConfig, cache: 'MISS' | 'REFRESH'): Promise<AgentCardEntry> {
    const valid = await fetchAgentCard(this.#deps.upstream, server);
    const fetchedAt = this.#deps.identity.now();
    await this.#deps.servers.update(server.id, { agent_card: JSON.stringify(valid.card), agent_card_fetched_at: fetchedAt });
    this.#cards.delete(server.id);
    return { ...valid, fetchedAt, cache };
  }
}
