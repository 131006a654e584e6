import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { GatewayError, postTokenForm, type UpstreamRequest, type UpstreamResponse } from '../../../sdk/index.js';

/**
 * Service-account credentials → Google OAuth access tokens
 * (shared/providers/vertex.md §2): an RS256-signed JWT is exchanged at the
 * key file's `token_uri` (RFC 7523 JWT bearer grant). Tokens are cached per
 * service account until 5 minutes before they expire, and concurrent requests
 * share one in-flight exchange.
 */

export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
export const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** A cached token is used until this long before it expires. */
export const EXPIRY_MARGIN_MS = 5 * 60_000;
/** JWT lifetime (Google accepts at most one hour). */
const JWT_LIFETIME_S = 3600;
const MAX_CACHED = 1000;
const TOKEN_HEADERS_TIMEOUT_MS = 30_000;

/** The fields of a key file this flow needs. */
export interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
  project_id?: string;
}

/** A service account ready to sign: its parsed key and its cache key. */
interface Prepared {
  account: ServiceAccount;
  key: KeyObject;
  cacheKey: string;
}

const unauthorized = (message: string) => new GatewayError('unauthorized', `Vertex AI: ${message}`, { param: 'vertex_service_account_json' });

/** Reads the key-file fields; a missing one is a 401 naming the field (never its value). */
export function parseServiceAccount(value: unknown): ServiceAccount {
  const sa = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  for (const field of ['client_email', 'private_key'] as const) {
    if (typeof sa[field] !== 'string' || sa[field] === '') throw unauthorized(`vertex_service_account_json.${field} is missing.`);
  }
  const tokenUri = sa.token_uri ?? DEFAULT_TOKEN_URI;
  if (typeof tokenUri !== 'string' || !/^https?:\/\/[^/]/i.test(tokenUri)) throw unauthorized('vertex_service_account_json.token_uri must be an http(s) URL.');
  const account: ServiceAccount = { client_email: sa.client_email as string, private_key: sa.private_key as string, token_uri: tokenUri };
  if (typeof sa.private_key_id === 'string' && sa.private_key_id !== '') account.private_key_id = sa.private_key_id;
  if (typeof sa.project_id === 'string' && sa.project_id !== '') account.project_id = sa.project_id;
  return account;
}

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A signed JWT assertion for the token exchange: header {alg, typ, kid}, claims iss/sub/scope/aud/iat/exp. */
export function signAssertion(account: ServiceAccount, key: KeyObject | string, nowMs: number): string {
  const header: Record<string, string> = { alg: 'RS256', typ: 'JWT' };
  if (account.private_key_id !== undefined) header.kid = account.private_key_id;
  const iat = Math.floor(nowMs / 1000);
  const claims = { iss: account.client_email, sub: account.client_email, scope: SCOPE, aud: account.token_uri, iat, exp: iat + JWT_LIFETIME_S };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`;
}

export type Send = (request: UpstreamRequest) => Promise<UpstreamResponse>;

/**
 * Access tokens per service account. The cache key is the client email, the
 * key id, the token URI and a hash of the private key: the first two alone are
 * not secret, so a caller knowing them must not get another tenant's token.
 */
export class TokenCache {
  readonly #send: Send;
  readonly #now: () => number;
  readonly #tokens = new Map<string, { token: string; refreshAt: number }>();
  readonly #pending = new Map<string, Promise<string>>();
  /** Parsed accounts by the config object they came from (configs are parsed once and reused). */
  readonly #prepared = new WeakMap<object, Prepared>();

  constructor(send: Send, now: () => number = () => Date.now()) {
    this.#send = send;
    this.#now = now;
  }

  /** A valid access token for the service account in `json` (a target's `vertex_service_account_json`). */
  token(json: object): Promise<string> {
    let sa: Prepared;
    try {
      sa = this.#prepare(json);
    } catch (err) {
      return Promise.reject(err);
    }
    const cached = this.#tokens.get(sa.cacheKey);
    if (cached !== undefined && this.#now() < cached.refreshAt) return Promise.resolve(cached.token);
    let pending = this.#pending.get(sa.cacheKey);
    if (pending === undefined) {
      pending = this.#fetch(sa).finally(() => this.#pending.delete(sa.cacheKey));
      this.#pending.set(sa.cacheKey, pending);
    }
    return pending;
  }

  /** How many tokens are cached (tests). */
  get size(): number {
    return this.#tokens.size;
  }

  #prepare(json: object): Prepared {
    const known = this.#prepared.get(json);
    if (known !== undefined) return known;
    const account = parseServiceAccount(json);
    let key: KeyObject;
    try {
      key = createPrivateKey(account.private_key);
    } catch {
      throw unauthorized('vertex_service_account_json.private_key is not a usable PEM private key.');
    }
    if (key.asymmetricKeyType !== 'rsa') throw unauthorized('vertex_service_account_json.private_key must be an RSA key.');
    const hash = createHash('sha256').update(account.private_key).digest('base64url');
    const prepared = { account, key, cacheKey: [account.client_email, account.private_key_id ?? '', account.token_uri, hash].join('\n') };
    this.#prepared.set(json, prepared);
    return prepared;
  }

  async #fetch(sa: Prepared): Promise<string> {
    const started = this.#now();
    const assertion = signAssertion(sa.account, sa.key, started);
    const { status, json } = await postTokenForm(this.#send, sa.account.token_uri, { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion });
    if (status >= 400 && status < 500) {
      const error = typeof json?.error === 'string' ? json.error.slice(0, 64) : `HTTP ${status}`;
      const description = typeof json?.error_description === 'string' ? `: ${json.error_description.slice(0, 200)}` : '';
      throw unauthorized(`the service account token exchange was refused (${error}${description}).`);
    }
    if (status !== 200) throw new GatewayError('upstream_unreachable', `Vertex AI: the token endpoint answered ${status}.`);
    const token = json?.access_token;
    const expiresIn = json?.expires_in;
    if (typeof token !== 'string' || token === '') throw new GatewayError('upstream_invalid_response', 'Vertex AI: the token endpoint answered without an access_token.');
    const lifetimeMs = (typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : 3600) * 1000;
    if (this.#tokens.size >= MAX_CACHED) this.#tokens.delete(this.#tokens.keys().next().value!);
    this.#tokens.set(sa.cacheKey, { token, refreshAt: started + lifetimeMs - EXPIRY_MARGIN_MS });
    return token;
  }
}

/** The pooled client's `send`, with a bounded wait for the token endpoint's headers. */
export function tokenSender(client: { send(request: UpstreamRequest, signal: AbortSignal | null, headersTimeoutMs?: number): Promise<UpstreamResponse> }): Send {
  return (request) => client.send(request, null, TOKEN_HEADERS_TIMEOUT_MS);
}
