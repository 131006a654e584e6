import { performance } from 'node:perf_hooks';
import { isObject, type RequestContext } from '../../sdk/index.js';
import { headerValue, readOwnAnswer } from './answers.js';
import { mcpError } from './errors.js';
import { GATEWAY_CLIENT_INFO } from './eras.js';
import { SESSION_VERSIONS, type SessionServer } from './revision.js';
import type { McpConnection, McpServerConfig } from './store/types.js';
import type { McpUpstream } from './upstream.js';

/** A session the gateway holds with a session-revision upstream on behalf of its 2026-07-28 (stateless) clients. */
export interface SessionLink {
  /** The upstream's session id (null: a server that keeps none). */
  upstreamSessionId: string | null;
  server: SessionServer;
  lastUsed: number;
}

/** Longest `initialize` answer read. */
const INITIALIZE_BYTES = 256 * 1024;
/** Links kept at most on an instance; past it, the least recently used is ended. */
const MAX_LINKS = 1000;

/**
 * The upstream sessions of stateless clients, one per connection (a user's link to a server) and instance. A
 * 2026-07-28 client sends every request on its own; a 2025 server wants `initialize` first and a session id after,
 * so the gateway initializes once (declaring no client capabilities: it cannot ask a stateless client the
 * server's questions) and sends each of the connection's requests in that session. A session the server lost
 * (404) is opened again; an idle one is ended with the gateway's session sweep.
 */
export class SessionLinks {
  readonly #upstream: McpUpstream;
  readonly #links = new Map<string, Promise<SessionLink>>();
  #opened = 0;

  constructor(upstream: McpUpstream) {
    this.#upstream = upstream;
  }

  /** The connection's link to the server, opened when there is none. */
  get(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, timeoutMs: number): Promise<SessionLink> {
    const key = keyOf(server, connection);
    let link = this.#links.get(key);
    if (link === undefined) {
      if (this.#links.size >= MAX_LINKS) this.#evictOldest(server, connection);
      link = this.#open(ctx, server, connection, timeoutMs);
      this.#links.set(key, link);
      // A link that failed to open is not kept: the next request tries again.
      link.catch(() => {
        if (this.#links.get(key) === link) this.#links.delete(key);
      });
    }
    return link.then((l) => {
      l.lastUsed = performance.now();
      return l;
    });
  }

  /** The link is gone upstream (404) or unusable: forgotten, so the next request opens another. */
  drop(server: McpServerConfig, connection: McpConnection): void {
    this.#links.delete(keyOf(server, connection));
  }

  /** Ends the links of a connection (revoked) or all idle ones, upstream too (best effort). */
  async end(which: { connection: McpConnection; server: McpServerConfig } | { idleBefore: number }, ender: (link: SessionLink) => Promise<void>): Promise<void> {
    for (const [key, pending] of [...this.#links]) {
      const link = await pending.catch(() => null);
      if (link === null) continue;
      const match = 'idleBefore' in which ? link.lastUsed < which.idleBefore : key === keyOf(which.server, which.connection);
      if (!match) continue;
      this.#links.delete(key);
      if (link.upstreamSessionId !== null) await ender(link);
    }
  }

  #evictOldest(server: McpServerConfig, connection: McpConnection): void {
    // Insertion order approximates age; the evicted session simply idles out upstream.
    const oldest = this.#links.keys().next().value;
    if (oldest !== undefined && oldest !== keyOf(server, connection)) this.#links.delete(oldest);
  }

  async #open(ctx: RequestContext, server: McpServerConfig, connection: McpConnection, timeoutMs: number): Promise<SessionLink> {
    const id = `gateway-initialize-${++this.#opened}`;
    const version = SESSION_VERSIONS[0];
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: GATEWAY_CLIENT_INFO } }));
    const deadline = performance.now() + timeoutMs;
    const upstream = await this.#upstream.call(ctx, server, connection, { method: 'POST', body, session: null, timeoutMs, headers: {} });
    if (upstream.status < 200 || upstream.status >= 300) {
      upstream.body.discard();
      throw mcpError('mcp_upstream_error', `The MCP server "${server.name}" refused the gateway's initialize: HTTP ${upstream.status}.`);
    }
    const upstreamSessionId = headerValue(upstream.headers['mcp-session-id']) ?? null;
    const answer = await readOwnAnswer(upstream, id, INITIALIZE_BYTES, deadline);
    const result = answer?.result;
    if (!isObject(result)) throw mcpError('mcp_upstream_error', `The MCP server "${server.name}" did not answer the gateway's initialize.`);
    const negotiated = typeof result.protocolVersion === 'string' && result.protocolVersion.length <= 64 ? result.protocolVersion : version;
    const link: SessionLink = {
      upstreamSessionId,
      server: {
        protocolVersion: negotiated,
        capabilities: isObject(result.capabilities) ? result.capabilities : {},
        serverInfo: isObject(result.serverInfo) ? result.serverInfo : null,
        instructions: typeof result.instructions === 'string' ? result.instructions : null,
      },
      lastUsed: performance.now(),
    };
    // The handshake's last step; the server needs it before it serves requests.
    const initialized = await this.#upstream.call(ctx, server, connection, {
      method: 'POST',
      body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })),
      session: { upstreamSessionId },
      timeoutMs: Math.max(1, Math.ceil(deadline - performance.now())),
      headers: { 'mcp-protocol-version': negotiated },
    });
    initialized.body.discard();
    return link;
  }
}

function keyOf(server: McpServerConfig, connection: McpConnection): string {
  return `${server.id}\n${server.url}\n${connection.id}`;
}
