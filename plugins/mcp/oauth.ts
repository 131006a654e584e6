import { createHash, randomBytes } from 'node:crypto';
import { GatewayError, type Logger, type UpstreamClient } from '../../sdk/index.js';
import type { McpCaller, McpConnection, McpServerConfig, McpServerStore, OAuthTokenSet } from './store/types.js';
import { upstreamFetch, type FetchLike } from './fetch.js';
import { mcpError } from './errors.js';

/**
 * OAuth 2.1 for MCP servers that use it, per user: the gateway is the OAuth
 * client (authorization code with PKCE, S256), each user authorizes it for
 * their own account once, and their tokens live in their connection, sealed.
 *
 * 1. Discovery: the server's protected resource metadata (RFC 9728), then its
 *    authorization server's metadata (RFC 8414 or OpenID discovery); without
 *    resource metadata, the server's origin is the authorization server.
 * 2. The client: the one configured on the server (`client_id`, optional
 *    `client_secret`), else one registered dynamically (RFC 7591) and kept.
 * 3. Authorization: a URL at the authorization server with the redirect URI
 *    `<public URL>/v1/mcp/oauth/callback`, the PKCE challenge, the resource
 *    (RFC 8707, the server's URL) and a `state` the gateway sealed: who asked,
 *    for which server, the PKCE verifier, an expiry. Nothing is kept in memory,
 *    so the redirect may land on any instance.
 * 4. The redirect: the state is opened and checked, the code exchanged with
 *    the verifier, the tokens sealed into the user's connection.
 * 5. Use: the access token as a bearer; refreshed shortly before it expires,
 *    or once when the server answers 401; when that fails the tokens are
 *    forgotten and the user authorizes again.
 * The MCP SDK's client functions do the discovery, registration, exchange and
 * refresh, through a `fetch` over the pooled client (the host policy applies).
 */

type Sdk = typeof import('@modelcontextprotocol/sdk/client/auth.js');
type ServerInfo = Awaited<ReturnType<Sdk['discoverOAuthServerInfo']>>;

/** What an MCP server's `Bearer` challenge said (a 401 without a token, or a 403 `insufficient_scope`). */
export interface Challenge {
  error?: string;
  /** The scopes the server asks for (space-separated). */
  scope?: string;
  /** Where its protected resource metadata is (RFC 9728's `resource_metadata`). */
  resourceMetadataUrl?: string;
}

export interface OAuthOptions {
  store: () => McpServerStore;
  upstream: UpstreamClient;
  now: () => number;
  /** How long an authorization URL stays valid. */
  stateTtlMs: number;
  /** `client_name` of a dynamic registration. */
  clientName: string;
  /** The gateway's client metadata document's URL, its `client_id` where the authorization server takes one (null: none). */
  clientMetadataUrl: string | null;
  logger: Logger;
}

/** What the state parameter carries, sealed. */
interface State {
  /** Server id. */
  s: string;
  /** The caller: user id (or null) and API key id. */
  u: string | null;
  k: string;
  /** PKCE verifier. */
  v: string;
  /** Redirect URI used. */
  r: string;
  /** The resource metadata URL the server's challenge named, when it named one (so the redirect discovers the same). */
  m?: string;
  /** Expiry, epoch ms. */
  e: number;
}

/** The user must (re)authorize the gateway for this server: the JSON-RPC error carries the URL. */
export class AuthorizationRequired extends Error {
  constructor(
    readonly url: string,
    readonly expiresAt: number,
    readonly serverName: string,
  ) {
    super(`Authorize the gateway to use the MCP server "${serverName}" for your account: open ${url} (valid until ${new Date(expiresAt).toISOString()}), then connect again.`);
    this.name = 'AuthorizationRequired';
  }
}

/** Refresh this long before the access token expires, so a call never starts with a token about to lapse. */
const REFRESH_MARGIN_MS = 60_000;
/** Discovery results are kept this long per server. */
const DISCOVERY_TTL_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 15_000;
const STATE_PURPOSE = 'oauth-state';

export class OAuthFlow {
  readonly #o: OAuthOptions;
  readonly #fetch: FetchLike;
  readonly #discovery = new Map<string, { at: number; info: ServerInfo }>();
  readonly #refreshing = new Map<string, Promise<OAuthTokenSet | null>>();
  readonly #registering = new Map<string, Promise<{ client_id: string; client_secret?: string }>>();
  #sdk: Promise<Sdk> | null = null;

  constructor(options: OAuthOptions) {
    this.#o = options;
    this.#fetch = upstreamFetch(options.upstream, FETCH_TIMEOUT_MS);
  }

  /** The SDK's auth module, loaded on first use: a gateway whose servers never use OAuth never loads it. */
  #auth(): Promise<Sdk> {
    return (this.#sdk ??= import('@modelcontextprotocol/sdk/client/auth.js'));
  }

  /**
   * The `Bearer` challenge of a 401 or 403 (RFC 6750, RFC 9728: `error`, `scope`, `resource_metadata`), read by the
   * MCP SDK; null when the answer carries none.
   */
  async challenge(header: string | string[] | undefined): Promise<Challenge | null> {
    const value = Array.isArray(header) ? header.join(', ') : header;
    if (value === undefined || value === '') return null;
    const sdk = await this.#auth();
    let params: ReturnType<Sdk['extractWWWAuthenticateParams']>;
    try {
      params = sdk.extractWWWAuthenticateParams(new Response(null, { headers: { 'www-authenticate': value } }));
    } catch {
      return null;
    }
    if (params.error === undefined && params.scope === undefined && params.resourceMetadataUrl === undefined) return null;
    return { error: params.error, scope: params.scope, resourceMetadataUrl: params.resourceMetadataUrl?.href };
  }

  async #info(server: McpServerConfig, resourceMetadataUrl?: string): Promise<ServerInfo> {
    const key = `${server.id}\n${server.url}\n${resourceMetadataUrl ?? ''}`;
    const known = this.#discovery.get(key);
    if (known !== undefined && this.#o.now() - known.at < DISCOVERY_TTL_MS) return known.info;
    const sdk = await this.#auth();
    let info: ServerInfo;
    try {
      info = await sdk.discoverOAuthServerInfo(server.url, { fetchFn: this.#fetch, ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: new URL(resourceMetadataUrl) }) });
    } catch (err) {
      throw failed(server, 'its authorization server could not be discovered', err);
    }
    // RFC 9728 §3.3: metadata naming another resource is not this server's (a server pointing clients at another's).
    const resource = info.resourceMetadata?.resource;
    if (resource !== undefined) {
      const { checkResourceAllowed } = await import('@modelcontextprotocol/sdk/shared/auth-utils.js');
      if (!checkResourceAllowed({ requestedResource: server.url, configuredResource: resource })) {
        throw failed(server, `its protected resource metadata is for another resource (${String(resource).slice(0, 200)}, not ${server.url})`);
      }
    }
    if (this.#discovery.size > 1000) this.#discovery.clear();
    this.#discovery.set(key, { at: this.#o.now(), info });
    return info;
  }

  /** The client the gateway is at the server's authorization server: configured, or registered now and kept. */
  async #client(server: McpServerConfig, info: ServerInfo, redirectUri: string): Promise<{ client_id: string; client_secret?: string }> {
    const auth = server.auth as Extract<McpServerConfig['auth'], { type: 'oauth' }>;
    // A client registered at another authorization server (the server moved to a new one) is registered again there.
    const stale = auth.registered === true && auth.issuer !== undefined && auth.issuer !== null && auth.issuer !== info.authorizationServerUrl;
    if (auth.clientId !== null && !stale) return auth.clientSecret === null ? { client_id: auth.clientId } : { client_id: auth.clientId, client_secret: auth.clientSecret };
    // One registration per server at a time: two users authorizing at once must end up with the same client.
    let pending = this.#registering.get(server.id);
    if (pending === undefined) {
      pending = this.#register(server, info, redirectUri).finally(() => this.#registering.delete(server.id));
      this.#registering.set(server.id, pending);
    }
    return pending;
  }

  async #register(server: McpServerConfig, info: ServerInfo, redirectUri: string): Promise<{ client_id: string; client_secret?: string }> {
    const metadata = info.authorizationServerMetadata;
    // Client ID Metadata Documents: where the authorization server reads a client's metadata from its URL, that URL
    // is the client id, and nothing is registered (a public client: no secret).
    const cimd = (metadata as { client_id_metadata_document_supported?: unknown } | undefined)?.client_id_metadata_document_supported === true;
    if (cimd && this.#o.clientMetadataUrl !== null) {
      await this.#o.store().saveOAuthClient(server.id, this.#o.clientMetadataUrl, null, info.authorizationServerUrl);
      return { client_id: this.#o.clientMetadataUrl };
    }
    // Without metadata at all, the default endpoint (`/register` at the authorization server) is tried.
    if (metadata !== undefined && metadata.registration_endpoint === undefined) {
      throw mcpError('mcp_authorization_failed', `MCP server "${server.name}": its authorization server offers no dynamic client registration; set auth.client_id (and client_secret) on the server.`);
    }
    const methods = metadata?.token_endpoint_auth_methods_supported;
    // A server-side client can keep a secret: ask for one where the server allows it.
    const method = methods === undefined || methods.includes('client_secret_basic') ? 'client_secret_basic' : methods.includes('client_secret_post') ? 'client_secret_post' : 'none';
    const sdk = await this.#auth();
    let registered;
    try {
      registered = await sdk.registerClient(info.authorizationServerUrl, {
        metadata,
        clientMetadata: {
          client_name: this.#o.clientName,
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: method,
          // OpenID's registration field (RFC 7591 allows it), as MCP asks clients to send it: `native` for a loopback
          // redirect (a gateway on a developer's machine), else `web`.
          application_type: isLoopback(redirectUri) ? 'native' : 'web',
        } as Parameters<Sdk['registerClient']>[1]['clientMetadata'],
        fetchFn: this.#fetch,
      });
    } catch (err) {
      throw failed(server, 'registering the gateway as a client failed', err);
    }
    await this.#o.store().saveOAuthClient(server.id, registered.client_id, registered.client_secret ?? null, info.authorizationServerUrl);
    return registered.client_secret === undefined ? { client_id: registered.client_id } : { client_id: registered.client_id, client_secret: registered.client_secret };
  }

  /** An authorization URL for this caller and server, valid for `stateTtlMs`. */
  async authorizationUrl(server: McpServerConfig, caller: McpCaller, redirectUri: string, challenge?: Challenge): Promise<{ url: string; expiresAt: number }> {
    const info = await this.#info(server, challenge?.resourceMetadataUrl);
    const client = await this.#client(server, info, redirectUri);
    const metadata = info.authorizationServerMetadata;
    const endpoint = metadata?.authorization_endpoint ?? new URL('/authorize', info.authorizationServerUrl).href;
    if (metadata !== undefined && !metadata.response_types_supported.includes('code')) throw failed(server, 'its authorization server does not offer the authorization code flow');
    if (metadata?.code_challenge_methods_supported !== undefined && !metadata.code_challenge_methods_supported.includes('S256')) {
      throw failed(server, 'its authorization server does not support PKCE with S256');
    }
    const verifier = randomBytes(32).toString('base64url');
    const expiresAt = this.#o.now() + this.#o.stateTtlMs;
    const state: State = { s: server.id, u: caller.userId, k: caller.apiKeyId, v: verifier, r: redirectUri, e: expiresAt, ...(challenge?.resourceMetadataUrl === undefined ? {} : { m: challenge.resourceMetadataUrl }) };
    const url = new URL(endpoint);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', client.client_id);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', this.#o.store().seal(JSON.stringify(state), STATE_PURPOSE));
    url.searchParams.set('resource', resourceOf(server, info));
    const scope = scopeOf(server, info, challenge?.scope);
    if (scope !== undefined) url.searchParams.set('scope', scope);
    return { url: url.href, expiresAt };
  }

  /**
   * The redirect from the authorization server: the state checked, the code
   * exchanged, the tokens kept in the caller's connection (made if the user
   * revoked it meanwhile).
   */
  async complete(query: URLSearchParams): Promise<{ server: McpServerConfig; connection: McpConnection }> {
    const sealed = query.get('state');
    if (sealed === null || sealed === '') throw new GatewayError('invalid_request', 'The redirect carries no state parameter.', { param: 'state' });
    let state: State;
    try {
      state = JSON.parse(this.#o.store().open(sealed, STATE_PURPOSE)) as State;
    } catch {
      throw new GatewayError('invalid_request', 'The state parameter was not issued by this gateway (or its encryption key changed): start the authorization again.', { param: 'state' });
    }
    if (this.#o.now() > state.e) throw new GatewayError('invalid_request', 'This authorization expired: start it again.', { param: 'state' });
    const server = await this.#o.store().serverById(state.s);
    if (server === undefined || server.auth.type !== 'oauth') throw new GatewayError('not_found', 'The MCP server of this authorization no longer exists or no longer uses OAuth.', { param: 'state' });
    const error = query.get('error');
    if (error !== null) {
      const description = query.get('error_description');
      throw mcpError('mcp_authorization_failed', `MCP server "${server.name}": the authorization server refused (${error.slice(0, 64)}${description === null ? '' : `: ${description.slice(0, 200)}`}).`);
    }
    const code = query.get('code');
    if (code === null || code === '') throw new GatewayError('invalid_request', 'The redirect carries no code parameter.', { param: 'code' });
    const info = await this.#info(server, state.m);
    // RFC 9207: the issuer the redirect names must be the one the request went to (a mix-up otherwise); a server
    // that says it always names one must have.
    const iss = query.get('iss');
    const issuer = info.authorizationServerMetadata?.issuer;
    if (iss !== null && issuer !== undefined && iss !== issuer) throw failed(server, `the redirect came from another issuer (${iss.slice(0, 200)}, not ${issuer})`);
    if (iss === null && (info.authorizationServerMetadata as { authorization_response_iss_parameter_supported?: unknown } | undefined)?.authorization_response_iss_parameter_supported === true) throw failed(server, 'the redirect names no issuer, which its authorization server says it always does');
    const client = await this.#client(server, info, state.r);
    const sdk = await this.#auth();
    let tokens;
    try {
      tokens = await sdk.exchangeAuthorization(info.authorizationServerUrl, {
        metadata: info.authorizationServerMetadata,
        clientInformation: client,
        authorizationCode: code,
        codeVerifier: state.v,
        redirectUri: state.r,
        // The same text as the authorization request's (a URL object would gain a trailing slash on a bare origin).
        resource: resourceOf(server, info) as unknown as URL,
        fetchFn: this.#fetch,
      });
    } catch (err) {
      throw failed(server, 'exchanging the authorization code failed', err);
    }
    const connection = (await this.#o.store().connection(server, { userId: state.u, apiKeyId: state.k }, true))!;
    await this.#o.store().saveTokens(connection.id, this.#tokenSet(tokens));
    return { server, connection };
  }

  #tokenSet(tokens: { access_token: string; token_type?: string; refresh_token?: string; expires_in?: number; scope?: string }, previous?: OAuthTokenSet): OAuthTokenSet {
    const set: OAuthTokenSet = { access_token: tokens.access_token, token_type: tokens.token_type ?? 'Bearer' };
    const refresh = tokens.refresh_token ?? previous?.refresh_token;
    if (refresh !== undefined) set.refresh_token = refresh;
    if (typeof tokens.expires_in === 'number' && Number.isFinite(tokens.expires_in)) set.expires_at = this.#o.now() + tokens.expires_in * 1000;
    if (tokens.scope !== undefined) set.scope = tokens.scope;
    return set;
  }

  /**
   * The access token to send for this connection: refreshed first when it
   * expires within a minute (or `force`, after a 401). Null when there is
   * none or it cannot be refreshed: the tokens are then forgotten.
   */
  async accessToken(server: McpServerConfig, connection: McpConnection, force = false): Promise<string | null> {
    const tokens = connection.tokens;
    if (tokens === null) return null;
    const due = tokens.expires_at !== undefined && tokens.expires_at - REFRESH_MARGIN_MS <= this.#o.now();
    if (!force && !due) return tokens.access_token;
    if (tokens.refresh_token === undefined) {
      await this.#o.store().saveTokens(connection.id, null);
      return null;
    }
    // One refresh per connection at a time: concurrent calls share it (a refresh token may be single use).
    let pending = this.#refreshing.get(connection.id);
    if (pending === undefined) {
      pending = this.#refresh(server, connection, tokens).finally(() => this.#refreshing.delete(connection.id));
      this.#refreshing.set(connection.id, pending);
    }
    return (await pending)?.access_token ?? null;
  }

  async #refresh(server: McpServerConfig, connection: McpConnection, tokens: OAuthTokenSet): Promise<OAuthTokenSet | null> {
    try {
      const info = await this.#info(server);
      const auth = server.auth as Extract<McpServerConfig['auth'], { type: 'oauth' }>;
      if (auth.clientId === null) throw new Error('no client registered');
      const sdk = await this.#auth();
      const fresh = await sdk.refreshAuthorization(info.authorizationServerUrl, {
        metadata: info.authorizationServerMetadata,
        clientInformation: auth.clientSecret === null ? { client_id: auth.clientId } : { client_id: auth.clientId, client_secret: auth.clientSecret },
        refreshToken: tokens.refresh_token!,
        resource: resourceOf(server, info) as unknown as URL,
        fetchFn: this.#fetch,
      });
      const set = this.#tokenSet(fresh, tokens);
      // Revoked meanwhile: the new tokens are not kept (nor used).
      return (await this.#o.store().saveTokens(connection.id, set)) ? set : null;
    } catch (err) {
      this.#o.logger.info({ err: (err as Error).message, mcp_server_id: server.id, connection_id: connection.id }, 'refreshing an MCP OAuth token failed; the user must authorize again');
      await this.#o.store().saveTokens(connection.id, null);
      return null;
    }
  }

  /** Forgets a connection's tokens (the server refused them and they could not be refreshed). */
  async forget(connection: McpConnection): Promise<void> {
    await this.#o.store().saveTokens(connection.id, null);
  }
}

/** RFC 8707's resource: the resource metadata's own identifier when the server publishes one, else its URL. */
function resourceOf(server: McpServerConfig, info: ServerInfo): string {
  return info.resourceMetadata?.resource ?? server.url;
}

/**
 * The scopes asked for: the server's configured ones, else those its challenge asked for (MCP's scope selection:
 * the `WWW-Authenticate` scope first), else those its resource metadata lists, else none.
 */
function scopeOf(server: McpServerConfig, info: ServerInfo, challenged?: string): string | undefined {
  const auth = server.auth as Extract<McpServerConfig['auth'], { type: 'oauth' }>;
  if (auth.scopes !== null && auth.scopes.length > 0) return auth.scopes.join(' ');
  if (challenged !== undefined && challenged.trim() !== '') return challenged.trim();
  const listed = info.resourceMetadata?.scopes_supported;
  return listed === undefined || listed.length === 0 ? undefined : listed.join(' ');
}

function failed(server: McpServerConfig, what: string, err?: unknown): GatewayError {
  if (err instanceof GatewayError && err.code === 'host_not_allowed') return err;
  // The SDK's messages name endpoints and OAuth error codes, never credentials; cut them short all the same.
  const why = err instanceof Error && err.message !== '' ? `: ${err.message.slice(0, 300)}` : '';
  return mcpError('mcp_authorization_failed', `MCP server "${server.name}": ${what}${why}.`, { cause: err });
}

/** Whether a redirect URI points at this machine (`localhost`, 127.0.0.0/8, `::1`). */
function isLoopback(uri: string): boolean {
  let host: string;
  try {
    host = new URL(uri).hostname;
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}
