import type * as Client from 'openid-client';
import type { UpstreamClient } from '../../sdk/index.js';
import { readText } from '../../sdk/index.js';

/*
 * The OpenID Connect relying party, on openid-client: issuer discovery, the
 * authorization code flow with PKCE (S256), and the ID token verified against
 * the issuer's published keys (non-repudiation checks on: openid-client would
 * otherwise trust an ID token from the token endpoint on the strength of TLS
 * alone). Every request to the identity provider goes through the gateway's
 * upstream client, so the outbound host policy applies to discovery, the token
 * endpoint and the JWKS exactly as to any provider call.
 */

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE alone, `token_endpoint_auth_method: none`). */
  clientSecret: string | undefined;
  redirectUri: string;
  scopes: readonly string[];
  /** Allow http:// issuers (development against a local provider only). */
  allowHttp: boolean;
  /** How long one request to the provider may take. */
  timeoutMs: number;
}

/**
 * openid-client, loaded on the first sign-in: a gateway without single sign-on
 * (the default config, with no issuer set) never holds it (about 6 MB of RSS).
 */
let loaded: Promise<typeof Client> | null = null;
const library = (): Promise<typeof Client> => (loaded ??= import('openid-client'));

/** The largest answer read from the identity provider (metadata, JWKS, tokens are a few KiB). */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** A Fetch API function that sends through the gateway's pooled client (and so through its host policy). */
export function policyFetch(upstream: UpstreamClient): Client.CustomFetch {
  return async (url, options) => {
    const body = options.body;
    const payload = body === undefined || body === null ? null : typeof body === 'string' ? body : body instanceof URLSearchParams ? body.toString() : Buffer.from(await new Response(body as BodyInit).arrayBuffer());
    const answer = await upstream.send({ method: options.method, url, headers: { ...options.headers }, body: payload }, options.signal ?? null);
    const text = await readText(answer.body, MAX_ANSWER_BYTES);
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    // A Response cannot carry a body with these statuses.
    const empty = answer.status === 204 || answer.status === 304;
    return new Response(empty ? null : text, { status: answer.status, headers });
  };
}

/** The relying party: discovery once (retried after a failure), then logins. */
export class OidcClient {
  #config: Promise<Client.Configuration> | null = null;

  constructor(
    private readonly settings: OidcSettings,
    private readonly fetch: Client.CustomFetch,
  ) {}

  /** The issuer's configuration, discovered on first use (so an unreachable provider never stops the gateway from starting). */
  configuration(): Promise<Client.Configuration> {
    this.#config ??= this.#discover().catch((err: unknown) => {
      this.#config = null;
      throw err;
    });
    return this.#config;
  }

  async #discover(): Promise<Client.Configuration> {
    const client = await library();
    const s = this.settings;
    const auth = s.clientSecret === undefined ? client.None() : client.ClientSecretBasic(s.clientSecret);
    const config = await client.discovery(new URL(s.issuer), s.clientId, s.clientSecret === undefined ? { token_endpoint_auth_method: 'none' } : undefined, auth, {
      [client.customFetch]: this.fetch,
      execute: s.allowHttp ? [client.allowInsecureRequests] : [],
      timeout: Math.ceil(s.timeoutMs / 1000),
    });
    client.enableNonRepudiationChecks(config);
    return config;
  }

  /** Where to send the browser, and what the callback must check. */
  async start(): Promise<{ url: string; state: string; nonce: string; verifier: string }> {
    const config = await this.configuration();
    const client = await library();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUri,
      scope: this.settings.scopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state, nonce, verifier };
  }

  /**
   * Exchanges the code of a callback (its query string) and returns the
   * verified ID token's claims. A provider that keeps the email out of the ID
   * token (scope claims only at the userinfo endpoint, as the OpenID spec
   * allows) is asked there, for the same subject.
   */
  async finish(query: string, expected: { state: string; nonce: string; verifier: string }): Promise<Record<string, unknown>> {
    const config = await this.configuration();
    const client = await library();
    const current = new URL(this.settings.redirectUri);
    current.search = query;
    const tokens = await client.authorizationCodeGrant(config, current, {
      pkceCodeVerifier: expected.verifier,
      expectedState: expected.state,
      expectedNonce: expected.nonce,
      idTokenExpected: true,
    });
    const claims: Record<string, unknown> = { ...tokens.claims()! };
    if (typeof claims.email !== 'string' && config.serverMetadata().userinfo_endpoint !== undefined) {
      const info = await client.fetchUserInfo(config, tokens.access_token, String(claims.sub));
      for (const k of ['email', 'email_verified', 'name'] as const) if (claims[k] === undefined && info[k] !== undefined) claims[k] = info[k];
    }
    return claims;
  }

  /** The provider's end-session URL for this client, when it publishes one (RP-initiated logout). */
  async endSessionUrl(): Promise<string | null> {
    const config = await this.configuration().catch(() => null);
    if (config === null || config.serverMetadata().end_session_endpoint === undefined) return null;
    const client = await library();
    return client.buildEndSessionUrl(config, { client_id: this.settings.clientId }).href;
  }
}

/** A short, stable reason for a failed sign-in: the library's error code, never token material. */
export function failureCode(err: unknown): string {
  const e = err as { code?: unknown; error?: unknown; name?: unknown };
  if (typeof e?.error === 'string') return e.error.slice(0, 64);
  if (typeof e?.code === 'string') return e.code.slice(0, 64);
  return typeof e?.name === 'string' ? e.name.slice(0, 64) : 'unknown';
}
