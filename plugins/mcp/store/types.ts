import type { GuardrailLists, RequestContext } from '../../../sdk/index.js';
import type { UpstreamServerConfig } from '../../../sdk/admin/index.js';
import type { Envelope } from '../revision.js';

/*
 * The shapes the MCP gateway (`gateway.ts`, `oauth.ts`) and the store of MCP
 * servers, connections and sessions (`store/`) share.
 */

/** An MCP server registered in a workspace, as the MCP gateway needs it (`url`: the upstream's Streamable HTTP endpoint). */
export interface McpServerConfig extends UpstreamServerConfig {
  /** Tool names that may be listed and called; null: all. */
  allowedTools: ReadonlySet<string> | null;
  /** `input_guardrails` and `output_guardrails` run on tool calls (the same forms as in a config), or null. */
  guardrails: GuardrailLists | null;
}

/** An OAuth token set as the gateway keeps it for a user (sealed at rest). `expires_at` in epoch ms. */
export interface OAuthTokenSet {
  access_token: string;
  token_type?: string;
  refresh_token?: string;
  expires_at?: number;
  scope?: string;
}

/** Who a connection belongs to: a user (user keys, JWTs), else the API key itself (service keys, static keys). */
export interface McpCaller {
  userId: string | null;
  apiKeyId: string;
}

/** One user's standing link to one MCP server, with their OAuth tokens when the server uses OAuth. */
export interface McpConnection {
  id: string;
  serverId: string;
  workspaceId: string;
  userId: string | null;
  apiKeyId: string | null;
  tokens: OAuthTokenSet | null;
}

/** A session the gateway opened for a client, bound to the key that opened it. */
export interface McpSession {
  connectionId: string;
  serverId: string;
  apiKeyId: string;
  /** The upstream's own `mcp-session-id`, when it keeps sessions. */
  upstreamSessionId: string | null;
  /**
   * When the upstream speaks only MCP 2026-07-28 (stateless): what the client declared at `initialize`, which every
   * request forwarded for the session carries in its `_meta`. Null: the upstream keeps sessions (as before).
   */
  envelope: Envelope | null;
  lastUsedAt: number;
}

/**
 * The stored MCP servers, connections and sessions, as the MCP gateway and the
 * OAuth flow use them (the store is `store/store.ts`). Session ids are stored
 * as digests; tokens, upstream session ids and server secrets are sealed.
 */
export interface McpServerStore {
  /** The active server `id` the caller may use (its workspace's; any for organisation-level keys); undefined otherwise. */
  server(ctx: RequestContext, id: string): Promise<McpServerConfig | undefined>;
  /** The active server `id`, whoever asks (the OAuth redirect, which carries no key). */
  serverById(id: string): Promise<McpServerConfig | undefined>;
  /** The caller's connection to the server; created when `create` and there is none. */
  connection(server: McpServerConfig, caller: McpCaller, create: boolean): Promise<McpConnection | undefined>;
  /** Replaces a connection's OAuth tokens (null forgets them). False when the connection is gone (revoked meanwhile). */
  saveTokens(connectionId: string, tokens: OAuthTokenSet | null): Promise<boolean>;
  /** Keeps the OAuth client the gateway registered with the server's authorization server. */
  /** Keeps the client the gateway registered at `issuer` (the authorization server) for the server. */
  saveOAuthClient(serverId: string, clientId: string, clientSecret: string | null, issuer?: string | null): Promise<void>;
  createSession(sessionId: string, connection: McpConnection, apiKeyId: string, upstreamSessionId: string | null, envelope?: Envelope | null): Promise<void>;
  session(sessionId: string): Promise<McpSession | undefined>;
  /** Records that a session was used (callers throttle it). */
  touchSession(sessionId: string): Promise<void>;
  deleteSession(sessionId: string): Promise<void>;
  /** Which of these sessions still exist. */
  liveSessions(sessionIds: readonly string[]): Promise<Set<string>>;
  /** Deletes sessions unused since `before` (epoch ms); returns how many. */
  deleteIdleSessions(before: number): Promise<number>;
  /** Seals a value for the gateway's own later use (an OAuth `state`), bound to `purpose`. */
  seal(plaintext: string, purpose: string): string;
  /** Opens a sealed value; throws when it was not sealed here for `purpose`. */
  open(sealed: string, purpose: string): string;
}

/** An upstream session to end, as the store hands it over on a revocation. */
export interface McpSessionToEnd {
  sessionId: string;
  upstreamSessionId: string | null;
}

/**
 * What the MCP gateway does for the store when a connection is revoked or a
 * server archived: ends its sessions (a DELETE to the upstream for each
 * session that has one, and closing this instance's open streams).
 */
export interface McpSessionCloser {
  /** Best effort and in the background: the revocation does not wait for the upstream. */
  closeSessions(server: McpServerConfig, connection: McpConnection, sessions: readonly McpSessionToEnd[]): void;
}
