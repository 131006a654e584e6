import { createHash } from 'node:crypto';
import { GatewayError, postTokenForm, type Target, type UpstreamRequest, type UpstreamResponse } from '../../../sdk/index.js';

/**
 * Microsoft Entra ID tokens (client-credentials grant, shared/providers/azure.md §3),
 * for `azure-openai` and `azure-ai`. Tokens are cached per tenant, client,
 * scope and secret hash until 5 minutes before they expire; concurrent requests
 * share one in-flight fetch.
 *
 * Target fields (a provider slug's integration, or a config): `azure_entra_tenant_id`,
 * `azure_entra_client_id`, `azure_entra_client_secret`, all three or none; the
 * scope is `azure_entra_scope`, default `https://cognitiveservices.azure.com/.default`.
 * A ready token can be given as `azure_ad_token` instead. Without them, the
 * plugin's `entra` option, again as a whole.
 */

export const DEFAULT_ENTRA_SCOPE = 'https://cognitiveservices.azure.com/.default';
export const DEFAULT_AUTHORITY = 'https://login.microsoftonline.com';
export const EXPIRY_MARGIN_MS = 5 * 60_000;
const MAX_CACHED = 1000;
const TOKEN_HEADERS_TIMEOUT_MS = 30_000;

export interface EntraClient {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  scope: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The client-credentials settings of a target, or null when it has none. The
 * target's three fields and the plugin's defaults are never mixed: a request
 * naming its own tenant or client must bring its own secret, so the
 * operator's secret is only ever sent for the operator's own client.
 */
export function entraClientOf(target: Target, defaults: Partial<Omit<EntraClient, 'scope'>> = {}): EntraClient | null {
  const own = [target.azure_entra_tenant_id, target.azure_entra_client_id, target.azure_entra_client_secret].some((v) => str(v) !== undefined);
  const source = own
    ? { tenantId: str(target.azure_entra_tenant_id), clientId: str(target.azure_entra_client_id), clientSecret: str(target.azure_entra_client_secret) }
    : defaults;
  const { tenantId, clientId, clientSecret } = source;
  if (tenantId === undefined && clientId === undefined && clientSecret === undefined) return null;
  for (const [field, value] of [['azure_entra_tenant_id', tenantId], ['azure_entra_client_id', clientId], ['azure_entra_client_secret', clientSecret]] as const) {
    if (value === undefined) throw new GatewayError('unauthorized', `Entra ID authentication needs ${field}.`, { param: field });
  }
  if (!/^[A-Za-z0-9.-]+$/.test(tenantId!)) throw new GatewayError('unauthorized', 'azure_entra_tenant_id may hold only letters, digits, dots and dashes.', { param: 'azure_entra_tenant_id' });
  return { tenantId: tenantId!, clientId: clientId!, clientSecret: clientSecret!, scope: str(target.azure_entra_scope) ?? DEFAULT_ENTRA_SCOPE };
}

export type Send = (request: UpstreamRequest) => Promise<UpstreamResponse>;

export class EntraTokenCache {
  readonly #send: Send;
  readonly #authority: string;
  readonly #now: () => number;
  readonly #tokens = new Map<string, { token: string; refreshAt: number }>();
  readonly #pending = new Map<string, Promise<string>>();

  constructor(send: Send, authority = DEFAULT_AUTHORITY, now: () => number = () => Date.now()) {
    this.#send = send;
    this.#authority = authority.replace(/\/+$/, '');
    this.#now = now;
  }

  /** A valid token for the client and scope. */
  token(client: EntraClient): Promise<string> {
    const key = [client.tenantId, client.clientId, client.scope, createHash('sha256').update(client.clientSecret).digest('base64url')].join('\n');
    const cached = this.#tokens.get(key);
    if (cached !== undefined && this.#now() < cached.refreshAt) return Promise.resolve(cached.token);
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = this.#fetch(client, key).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    return pending;
  }

  get size(): number {
    return this.#tokens.size;
  }

  async #fetch(client: EntraClient, key: string): Promise<string> {
    const started = this.#now();
    const { status, json } = await postTokenForm(this.#send, `${this.#authority}/${encodeURIComponent(client.tenantId)}/oauth2/v2.0/token`, {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      scope: client.scope,
    });
    if (status >= 400 && status < 500) {
      const error = typeof json?.error === 'string' ? json.error.slice(0, 64) : `HTTP ${status}`;
      throw new GatewayError('unauthorized', `Entra ID refused the client credentials (${error}).`, { param: 'azure_entra_client_id' });
    }
    if (status !== 200) throw new GatewayError('upstream_unreachable', `The Entra ID token endpoint answered ${status}.`);
    const token = json?.access_token;
    if (typeof token !== 'string' || token === '') throw new GatewayError('upstream_invalid_response', 'The Entra ID token endpoint answered without an access_token.');
    const expiresIn = Number(json?.expires_in);
    const lifetimeMs = (Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : 3600) * 1000;
    if (this.#tokens.size >= MAX_CACHED) this.#tokens.delete(this.#tokens.keys().next().value!);
    this.#tokens.set(key, { token, refreshAt: started + lifetimeMs - EXPIRY_MARGIN_MS });
    return token;
  }
}

/** The pooled client's `send` with a bounded wait for the token endpoint. */
export function tokenSender(client: { send(request: UpstreamRequest, signal: AbortSignal | null, headersTimeoutMs?: number): Promise<UpstreamResponse> }): Send {
  return (request) => client.send(request, null, TOKEN_HEADERS_TIMEOUT_MS);
}

