import * as v from 'valibot';
import { abortable, effectiveBody, parseOptions, requestBody, STAGE, type GatewayPlugin, type GatewayResponse, type Provider, type ProviderRoute, type RequestContext, type Target } from '../../../core/index.js';
import { addShapedRoutes, type OpenAIRouteName } from '../openai-format/routes.js';
import { EntraTokenCache, entraClientOf, tokenSender, DEFAULT_AUTHORITY } from './entra.js';
import { azureAnswer } from './normalize.js';
import { azureOpenAIOrigin, isV1, operationPath, pickDeployment } from './url.js';

export const PLUGIN_NAME = 'azure-openai';
/** Inside retry, breaker and timeout: each attempt gets its origin and a valid token. */
export const AZURE_STAGE = STAGE.LATE;

export { pickDeployment, azureOpenAIOrigin, azureOpenAIURL, operationPath, isV1, type AzureDeployment } from './url.js';
export { EntraTokenCache, entraClientOf, DEFAULT_ENTRA_SCOPE, DEFAULT_AUTHORITY, type EntraClient } from './entra.js';
export { azureErrorAnswer, azureErrorFields, azureStreamTranslator } from './normalize.js';

export const EntraOptionsSchema = v.strictObject({
  /** Default client-credentials settings, used when a target names none. */
  tenantId: v.optional(v.pipe(v.string(), v.minLength(1))),
  clientId: v.optional(v.pipe(v.string(), v.minLength(1))),
  clientSecret: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Token authority (sovereign clouds: https://login.microsoftonline.us, …). */
  authority: v.optional(v.pipe(v.string(), v.url()), DEFAULT_AUTHORITY),
});

const OptionsSchema = v.strictObject({ entra: v.optional(EntraOptionsSchema, {}) });
export type AzureOpenAIOptions = v.InferInput<typeof OptionsSchema>;

const OPERATIONS: Readonly<Record<OpenAIRouteName, string>> = { 'chat.completions': 'chat/completions', completions: 'completions', embeddings: 'embeddings' };

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Azure credentials as headers: `api_key` → `api-key`; else a bearer token
 * (fetched through Entra ID by the interceptor, or `azure_ad_token` given ready).
 */
export function azureAuthHeaders(target: Target, bearer: string | undefined, keyHeader: 'api-key' | 'authorization' = 'api-key'): Record<string, string> {
  const key = str(target.api_key);
  if (key !== undefined) return keyHeader === 'api-key' ? { 'api-key': key } : { authorization: `Bearer ${key}` };
  const token = bearer ?? str(target.azure_ad_token);
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/** The interceptor both Azure providers use: a target copy with its origin as `custom_host` and, when needed, an Entra token. */
export function azurePreparer(
  name: string,
  origin: (target: Target) => string,
  tokens: EntraTokenCache,
  entraDefaults: { tenantId?: string; clientId?: string; clientSecret?: string },
  bearer: WeakMap<Target, string>,
) {
  return (next: (ctx: RequestContext, target: Target) => Promise<GatewayResponse>) => async (ctx: RequestContext, target: Target) => {
    if (target.provider !== name) return next(ctx, target);
    const prepared: Target = { ...target, custom_host: origin(target) };
    if (str(target.api_key) === undefined && str(target.azure_ad_token) === undefined) {
      const client = entraClientOf(target, entraDefaults);
      if (client !== null) bearer.set(prepared, await abortable(tokens.token(client), ctx.attemptSignal ?? ctx.signal));
    }
    return next(ctx, prepared);
  };
}

/**
 * The `azure-openai` provider (shared/providers/azure.md §1–5): chat,
 * completions and embeddings at
 * `https://{resource_name}.openai.azure.com/openai/deployments/{deployment}/…?api-version=…`
 * (or the v1 API with `api_version: "v1"`), every other path through the
 * generic proxy at `…/openai/<path>` (the client adds `api-version` there).
 * The deployment comes from `deployments` (alias = the request's model, else
 * `is_default`), else `deployment_id`, else the model name. Auth: `api_key` as
 * `api-key`, or an Entra ID bearer token: client credentials
 * (`azure_entra_tenant_id`, `azure_entra_client_id`, `azure_entra_client_secret`,
 * scope `azure_entra_scope` or the Cognitive Services default) fetched and
 * cached by an interceptor, or a ready `azure_ad_token`.
 * Streams are normalised (prompt-filter chunk dropped, content-filter fields
 * removed, empty ids filled); JSON answers pass through byte for byte.
 */
export function azureOpenAI(options: AzureOpenAIOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const bearer = new WeakMap<Target, string>();

  const response = azureAnswer(PLUGIN_NAME);

  const route = (name: OpenAIRouteName): ProviderRoute => ({
    path: (ctx, target) => operationPath(pickDeployment(target, str(effectiveBody(ctx, target)?.model)), OPERATIONS[name]),
    body: (ctx, target) => {
      const body = effectiveBody(ctx, target);
      const d = pickDeployment(target, str(body?.model));
      // The v1 API routes by the body's model, which must be the deployment name.
      if (body !== null && isV1(d.apiVersion) && body.model !== d.deployment) return JSON.stringify({ ...body, model: d.deployment });
      return requestBody(ctx, target) ?? '';
    },
    response,
  });

  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: 'https://{resource_name}.openai.azure.com/openai',
    authHeaders: (target) => azureAuthHeaders(target, bearer.get(target)),
    routes: { 'chat.completions': route('chat.completions'), completions: route('completions'), embeddings: route('embeddings') },
  };

  return {
    name: PLUGIN_NAME,
    apply(api) {
      const { authority, ...defaults } = opts.entra;
      const tokens = new EntraTokenCache(tokenSender(api.upstream), authority);
      addShapedRoutes(api, ['chat.completions', 'completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
      api.addInterceptor(PLUGIN_NAME, azurePreparer(PLUGIN_NAME, (t) => `${azureOpenAIOrigin(t)}/openai`, tokens, defaults, bearer), AZURE_STAGE);
    },
  };
}

export default azureOpenAI;
