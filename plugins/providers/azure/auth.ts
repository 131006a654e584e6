import * as v from 'valibot';
import { abortable, fieldSchema as f, type Provider, type Target, type TargetField } from '../../../sdk/index.js';
import { DEFAULT_AUTHORITY, EntraTokenCache, entraClientOf, type EntraClient } from './entra.js';

/** Plugin options of both Azure providers: default client-credentials settings, used when a target names none. */
export const EntraOptionsSchema = v.strictObject({
  tenantId: v.optional(v.pipe(v.string(), v.minLength(1))),
  clientId: v.optional(v.pipe(v.string(), v.minLength(1))),
  clientSecret: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Token authority (sovereign clouds: https://login.microsoftonline.us, …). */
  authority: v.optional(v.pipe(v.string(), v.url()), DEFAULT_AUTHORITY),
});

/**
 * Entra ID fields, read by both Azure providers. One object, declared by
 * both plugins (a field declared twice must be the same declaration): the
 * tenant and client say whose token is fetched, so a request may not change
 * them next to a slug; the secret and a ready token are credentials.
 */
export const ENTRA_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  azure_entra_tenant_id: { schema: f.string(), placement: true, inherit: 'same-provider' },
  azure_entra_client_id: { schema: f.string(), placement: true, inherit: 'same-provider' },
  azure_entra_client_secret: { schema: f.string(), credential: true, inherit: 'same-provider' },
  azure_entra_scope: { schema: f.string(), inherit: 'same-provider', aliases: ['cloudC_entra_scope'] },
  azure_ad_token: { schema: f.string(), credential: true, inherit: 'same-provider' },
});

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * Azure credentials as headers: `api_key` → `api-key` (or `Authorization:
 * Bearer`), else a ready `azure_ad_token`. An Entra ID token fetched for the
 * target is added by {@link entraPrepare}.
 */
export function azureAuthHeaders(target: Target, keyHeader: 'api-key' | 'authorization' = 'api-key'): Record<string, string> {
  const key = str(target.api_key);
  if (key !== undefined) return keyHeader === 'api-key' ? { 'api-key': key } : { authorization: `Bearer ${key}` };
  const token = str(target.azure_ad_token);
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/**
 * The `prepare` step of both Azure providers: a target with neither a key nor
 * a ready token, but Entra ID client credentials (its own or the plugin's
 * defaults), gets a bearer token from the cache, fetched when due. `tokens` is
 * read at call time: the cache needs the pooled client, set in `apply`.
 */
export function entraPrepare(tokens: () => EntraTokenCache, defaults: Partial<Omit<EntraClient, 'scope'>>): NonNullable<Provider['prepare']> {
  return async (request, target, ctx) => {
    if (str(target.api_key) !== undefined || str(target.azure_ad_token) !== undefined) return;
    const client = entraClientOf(target, defaults);
    if (client === null) return;
    request.headers.authorization = `Bearer ${await abortable(tokens().token(client), ctx.attemptSignal ?? ctx.signal)}`;
  };
}
