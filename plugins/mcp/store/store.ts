import { hash, randomUUID } from 'node:crypto';
import type { GuardrailRunner, Logger, RequestContext, SecretBox, UpstreamClient } from '../../../sdk/index.js';
import { openServer, registeredClient, TtlCache, type Identity, type UpstreamServerService } from '../../../sdk/admin/index.js';
import type { McpConnectionRow, McpRepository, McpServerRow } from './repository.js';
import type { McpCaller, McpConnection, McpServerConfig, McpServerStore, McpSession, McpSessionCloser, OAuthTokenSet } from './types.js';
import type { Envelope } from '../revision.js';

/** What the MCP store needs. */
export interface McpStoreDeps {
  /** Workspaces, the store, the encryption key, the clock and the caches' lifetime (the control plane's). */
  identity: Identity;
  repo: McpRepository;
  /** The pooled client (server URLs are checked against the outbound host policy when written). */
  upstream: UpstreamClient;
  /** The MCP gateway: ends a revoked connection's sessions. */
  closer: McpSessionCloser;
  /** The `guardrails` plugin's runner, when it is loaded (checks a server's guardrails when saved). */
  guardrails: () => GuardrailRunner | undefined;
  logger: Logger;
}

const MAX_CACHED = 10_000;

/** The subject a connection is keyed by: the user, else the key itself. */
export function subjectOf(caller: McpCaller): string {
  return caller.userId !== null ? `user:${caller.userId}` : `key:${caller.apiKeyId}`;
}

/** Session ids are bearer values (with the key that opened them): only their digest is stored. */
export function sessionDigest(sessionId: string): string {
  return hash('sha256', sessionId, 'hex');
}

const serverAad = (id: string) => `mcp-server:${id}`;
const connectionAad = (id: string) => `mcp-connection:${id}`;
const sessionAad = (digest: string) => `mcp-session:${digest}`;

/** A server row as the request path needs it: secrets opened, lists parsed. */
export function toServerConfig(box: SecretBox, row: McpServerRow): McpServerConfig {
  return Object.freeze({
    ...openServer(box, row, serverAad(row.id), `MCP server "${row.name}"`),
    allowedTools: row.allowed_tools === null ? null : new Set(JSON.parse(row.allowed_tools) as string[]),
    guardrails: row.guardrails === null ? null : Object.freeze(JSON.parse(row.guardrails)),
  });
}

/**
 * The MCP servers, connections and sessions in the store the control plane
 * opens, read through TTL caches (cleared by every admin write on this
 * instance, through `identity.onInvalidate`). It is also the service of the
 * admin routes (`routes.ts`, `connections.ts`).
 */
export class McpStore implements McpServerStore, UpstreamServerService<McpServerRow> {
  readonly #deps: McpStoreDeps;
  readonly #servers: TtlCache<McpServerConfig | null>;
  readonly #connections: TtlCache<McpConnection | null>;
  readonly #sessions: TtlCache<McpSession | null>;
  readonly identity: Identity;
  readonly upstream: UpstreamClient;
  readonly repo: McpRepository;
  readonly servers: McpRepository['servers'];

  constructor(deps: McpStoreDeps) {
    this.#deps = deps;
    this.identity = deps.identity;
    this.upstream = deps.upstream;
    this.repo = deps.repo;
    this.servers = deps.repo.servers;
    const cache = <V>() => new TtlCache<V>(deps.identity.cacheTtlMs, MAX_CACHED, () => deps.identity.now());
    this.#servers = cache();
    this.#connections = cache();
    this.#sessions = cache();
  }

  /** The `guardrails` plugin's runner, or undefined when it is not loaded. */
  get guardrails(): GuardrailRunner | undefined {
    return this.#deps.guardrails();
  }

  get #box(): SecretBox {
    return this.#deps.identity.box;
  }

  #now(): number {
    return this.#deps.identity.now();
  }

  clear(): void {
    this.#servers.clear();
    this.#connections.clear();
    this.#sessions.clear();
  }

  async serverById(id: string): Promise<McpServerConfig | undefined> {
    const config = await this.#servers.get(id, async () => {
      const row = await this.#deps.repo.servers.byId(id);
      return row === undefined || row.status !== 'active' ? null : toServerConfig(this.#box, row);
    });
    if (config === null) return undefined;
    const ws = await this.#deps.identity.workspace(config.workspaceId);
    return ws !== null && ws.status === 'active' ? config : undefined;
  }

  async server(ctx: RequestContext, id: string): Promise<McpServerConfig | undefined> {
    const config = await this.serverById(id);
    const own = ctx.auth?.workspaceId ?? null;
    // Another workspace's server is unknown to a workspace key, as if it did not exist.
    return config === undefined || (own !== null && own !== config.workspaceId) ? undefined : config;
  }

  async connection(server: McpServerConfig, caller: McpCaller, create: boolean): Promise<McpConnection | undefined> {
    const subject = subjectOf(caller);
    const key = `${server.id}\n${subject}`;
    const found = await this.#connections.get(key, async () => {
      const row = await this.#deps.repo.connection(server.id, subject);
      return row === undefined ? null : this.#toConnection(row);
    });
    if (found !== null || !create) return found ?? undefined;
    const now = this.#now();
    const row: McpConnectionRow = {
      id: randomUUID(),
      mcp_server_id: server.id,
      workspace_id: server.workspaceId,
      subject,
      user_id: caller.userId,
      api_key_id: caller.apiKeyId,
      tokens: null,
      token_expires_at: null,
      token_scope: null,
      created_at: now,
      updated_at: now,
      last_used_at: now,
    };
    try {
      await this.#deps.repo.insertConnection(row);
    } catch (err) {
      // Two first sessions at once: the other one's insert won; use its row.
      const other = await this.#deps.repo.connection(server.id, subject);
      if (other === undefined) throw err;
      this.#connections.delete(key);
      return this.#toConnection(other);
    }
    this.#connections.delete(key);
    return this.#toConnection(row);
  }

  #toConnection(row: McpConnectionRow): McpConnection {
    let tokens: OAuthTokenSet | null = null;
    if (row.tokens !== null) {
      try {
        tokens = JSON.parse(this.#box.open(row.tokens, connectionAad(row.id))) as OAuthTokenSet;
      } catch {
        // Sealed under another encryption key: the user authorizes again, as after a revocation.
        this.#deps.logger.warn({ connection_id: row.id }, 'an MCP connection\'s tokens cannot be decrypted with this gateway\'s encryption key; the user must authorize again');
      }
    }
    return Object.freeze({ id: row.id, serverId: row.mcp_server_id, workspaceId: row.workspace_id, userId: row.user_id, apiKeyId: row.api_key_id, tokens });
  }

  async saveTokens(connectionId: string, tokens: OAuthTokenSet | null): Promise<boolean> {
    const row = await this.#deps.repo.connectionById(connectionId);
    if (row === undefined) return false;
    const now = this.#now();
    await this.#deps.repo.updateConnection(connectionId, {
      tokens: tokens === null ? null : this.#box.seal(JSON.stringify(tokens), connectionAad(connectionId)),
      token_expires_at: tokens?.expires_at ?? null,
      token_scope: tokens?.scope ?? null,
      updated_at: now,
    });
    this.#connections.delete(`${row.mcp_server_id}\n${row.subject}`);
    return true;
  }

  async saveOAuthClient(serverId: string, clientId: string, clientSecret: string | null, issuer: string | null = null): Promise<void> {
    const row = await this.#deps.repo.servers.byId(serverId);
    if (row === undefined) return;
    const columns = registeredClient(this.#box, row.oauth, clientId, clientSecret, serverAad(serverId), issuer);
    await this.#deps.repo.servers.update(serverId, { ...columns, updated_at: this.#now() });
    this.#servers.delete(serverId);
  }

  async createSession(sessionId: string, connection: McpConnection, apiKeyId: string, upstreamSessionId: string | null, envelope: Envelope | null = null): Promise<void> {
    const digest = sessionDigest(sessionId);
    const now = this.#now();
    await this.#deps.repo.insertSession({
      id: digest,
      connection_id: connection.id,
      mcp_server_id: connection.serverId,
      api_key_id: apiKeyId,
      upstream_session: upstreamSessionId === null ? null : this.#box.seal(upstreamSessionId, sessionAad(digest)),
      // Only when there is one: a row the released version (which has no such column) could also have written.
      ...(envelope === null ? {} : { client_envelope: JSON.stringify(envelope) }),
      created_at: now,
      last_used_at: now,
    });
    await this.#deps.repo.updateConnection(connection.id, { last_used_at: now });
    this.#sessions.delete(digest);
  }

  async session(sessionId: string): Promise<McpSession | undefined> {
    const digest = sessionDigest(sessionId);
    const found = await this.#sessions.get(digest, async () => {
      const row = await this.#deps.repo.session(digest);
      if (row === undefined) return null;
      let upstreamSessionId: string | null = null;
      if (row.upstream_session !== null) {
        try {
          upstreamSessionId = this.#box.open(row.upstream_session, sessionAad(digest));
        } catch {
          return null; // Unreadable: the client starts a new session.
        }
      }
      let envelope: Envelope | null = null;
      if (typeof row.client_envelope === 'string') {
        try {
          envelope = JSON.parse(row.client_envelope) as Envelope;
        } catch {
          return null;
        }
      }
      return Object.freeze({ connectionId: row.connection_id, serverId: row.mcp_server_id, apiKeyId: row.api_key_id, upstreamSessionId, envelope, lastUsedAt: row.last_used_at });
    });
    return found ?? undefined;
  }

  async touchSession(sessionId: string): Promise<void> {
    const digest = sessionDigest(sessionId);
    const now = this.#now();
    const row = await this.#deps.repo.session(digest);
    if (row === undefined) return;
    await this.#deps.repo.updateSession(digest, { last_used_at: now });
    await this.#deps.repo.updateConnection(row.connection_id, { last_used_at: now });
    this.#sessions.delete(digest);
  }

  async deleteSession(sessionId: string): Promise<void> {
    const digest = sessionDigest(sessionId);
    await this.#deps.repo.deleteSession(digest);
    this.#sessions.delete(digest);
  }

  async liveSessions(sessionIds: readonly string[]): Promise<Set<string>> {
    const byDigest = new Map(sessionIds.map((id) => [sessionDigest(id), id]));
    const live = await this.#deps.repo.liveSessions([...byDigest.keys()]);
    return new Set([...live].map((d) => byDigest.get(d)!));
  }

  async deleteIdleSessions(before: number): Promise<number> {
    const n = await this.#deps.repo.deleteIdleSessions(before);
    if (n > 0) this.#sessions.clear();
    return n;
  }

  seal(plaintext: string, purpose: string): string {
    return this.#box.seal(plaintext, `mcp:${purpose}`);
  }

  open(sealed: string, purpose: string): string {
    return this.#box.open(sealed, `mcp:${purpose}`);
  }

  /**
   * Revokes a connection: its sessions are ended (the MCP gateway sends each
   * upstream session a DELETE, with the tokens still in hand, and closes this
   * instance's streams), then the sessions and the tokens are forgotten.
   * Returns how many sessions it had.
   */
  async revoke(server: McpServerRow, connection: McpConnectionRow): Promise<number> {
    const sessions = await this.#deps.repo.sessionsOf(connection.id);
    if (sessions.length > 0) {
      try {
        const config = toServerConfig(this.#box, server);
        const ended = sessions.map((s) => {
          let upstreamSessionId: string | null = null;
          try {
            upstreamSessionId = s.upstream_session === null ? null : this.#box.open(s.upstream_session, sessionAad(s.id));
          } catch {
            /* unreadable: nothing to end upstream */
          }
          return { sessionId: s.id, upstreamSessionId };
        });
        this.#deps.closer.closeSessions(config, this.#toConnection(connection), ended);
      } catch (err) {
        // Ending sessions upstream is a courtesy; forgetting them and the tokens is what revocation means.
        this.#deps.logger.warn({ err, mcp_server_id: server.id }, 'ending the upstream sessions of a revoked MCP connection failed');
      }
    }
    await this.#deps.repo.deleteConnection(connection.id);
    this.clear();
    return sessions.length;
  }

  /** Revokes every connection of a server (archived, or its URL or auth changed). Returns how many. */
  async revokeAll(server: McpServerRow): Promise<number> {
    let n = 0;
    for (;;) {
      const page = await this.#deps.repo.connections(server.id, null, { current: 0, size: 100 });
      if (page.data.length === 0) return n;
      for (const c of page.data) await this.revoke(server, c);
      n += page.data.length;
    }
  }
}
