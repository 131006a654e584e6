import * as v from 'valibot';
import {
  addShapedRoutes,
  asksStreamUsage,
  effectiveBody,
  fieldSchema as f,
  MEDIA_ROUTES,
  openAIMediaRoute,
  type MediaRouteName,
  openAIFormatResponse,
  readErrorJson,
  parseOptions,
  requestBody,
  streamUsageBody,
  type GatewayPlugin,
  type OpenAIRouteName,
  type Provider,
  type ProviderRoute,
  type RequestContext,
  type Target,
  type TargetField,
} from '../../../../sdk/index.js';
import { azureAuthHeaders, ENTRA_FIELDS, entraPrepare, EntraOptionsSchema } from '../auth.js';
import { EntraTokenCache, tokenSender } from '../entra.js';
import { azureAnswer, azureErrorAnswer } from '../normalize.js';
import { acceptsStreamOptions, azureOpenAIOrigin, isV1, operationPath, pickDeployment, resourceURL } from './url.js';

export const PLUGIN_NAME = 'azure-openai';

export { pickDeployment, azureOpenAIOrigin, azureOpenAIURL, operationPath, isV1, acceptsStreamOptions, type AzureDeployment } from './url.js';
export { EntraTokenCache, entraClientOf, DEFAULT_ENTRA_SCOPE, DEFAULT_AUTHORITY, type EntraClient } from '../entra.js';
export { azureErrorAnswer, azureErrorFields, azureStreamTranslator } from '../normalize.js';
export { azureAuthHeaders, ENTRA_FIELDS, EntraOptionsSchema } from '../auth.js';

const DeploymentSchema = f.strictObject({
  deployment_id: f.string(),
  alias: f.string(),
  api_version: f.string(),
  is_default: v.optional(f.boolean()),
});

/** The target fields Azure OpenAI reads: the resource (host), the deployments and API version, and Entra ID. */
export const AZURE_OPENAI_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  resource_name: { schema: f.string(), placement: true, inherit: 'same-provider' },
  deployment_id: { schema: f.string(), inherit: 'same-provider' },
  api_version: { schema: f.string(), inherit: 'same-provider' },
  deployments: { schema: f.list(DeploymentSchema, 'deployment objects'), inherit: 'same-provider' },
  ...ENTRA_FIELDS,
});

const OptionsSchema = v.strictObject({ entra: v.optional(EntraOptionsSchema, {}) });
export type AzureOpenAIOptions = v.InferInput<typeof OptionsSchema>;

const OPERATIONS: Readonly<Record<OpenAIRouteName, string>> = { 'chat.completions': 'chat/completions', completions: 'completions', embeddings: 'embeddings' };

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** The media routes an Azure OpenAI deployment serves (docs/media.md). */
const AZURE_MEDIA: readonly MediaRouteName[] = ['images.generations', 'images.edits', 'audio.speech', 'audio.transcriptions', 'audio.translations'];

/** The operations whose streams report usage only when asked (`stream_options.include_usage`). */
const USAGE_OPERATIONS: ReadonlySet<OpenAIRouteName> = new Set(['chat.completions', 'completions']);

/**
 * Whether the gateway asks this attempt's deployment for a stream's usage: a stream the client asked
 * no usage for (`asksStreamUsage`), on an API version that takes `stream_options`.
 */
function asksUsage(ctx: RequestContext, target: Target): boolean {
  return asksStreamUsage(ctx, target) && acceptsStreamOptions(pickDeployment(target, str(effectiveBody(ctx, target)?.model)).apiVersion);
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
 * cached in `prepare`, or a ready `azure_ad_token`.
 * Streams are normalised (prompt-filter chunk dropped, content-filter fields
 * removed, empty ids filled); JSON answers pass through byte for byte. A chat
 * or completions stream whose client asked no usage is sent with
 * `stream_options.include_usage` on API versions that take it (`acceptsStreamOptions`),
 * and the usage event is recorded, not passed on.
 */
export function azureOpenAI(options: AzureOpenAIOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const { authority, ...defaults } = opts.entra;
  let tokens: EntraTokenCache | null = null;
  const response = azureAnswer(PLUGIN_NAME);
  // Chat and completions streams the gateway asked usage for lose the usage event on the way out.
  const usageResponse = azureAnswer(PLUGIN_NAME, asksUsage);

  const route = (name: OpenAIRouteName): ProviderRoute => {
    const usage = USAGE_OPERATIONS.has(name);
    return {
      path: (ctx, target) => operationPath(pickDeployment(target, str(effectiveBody(ctx, target)?.model)), OPERATIONS[name]),
      body: (ctx, target) => {
        const body = effectiveBody(ctx, target);
        const d = pickDeployment(target, str(body?.model));
        // The v1 API routes by the body's model, which must be the deployment name.
        const model = body !== null && isV1(d.apiVersion) && body.model !== d.deployment ? d.deployment : undefined;
        if (usage && acceptsStreamOptions(d.apiVersion)) {
          const asked = streamUsageBody(ctx, target, model);
          if (asked !== null) return asked;
        }
        if (model !== undefined) return JSON.stringify({ ...body, model });
        return requestBody(ctx, target) ?? '';
      },
      response: usage ? usageResponse : response,
    };
  };

  // The Responses API lives beside the deployments: `/openai/v1/responses`, or `/openai/responses?api-version=…`; the body's model names the deployment.
  const responsesRoute: ProviderRoute = {
    path: (ctx, target) => {
      const d = pickDeployment(target, str(effectiveBody(ctx, target)?.model));
      return isV1(d.apiVersion) ? '/v1/responses' : `/responses?api-version=${encodeURIComponent(d.apiVersion)}`;
    },
    body: (ctx, target) => {
      const body = effectiveBody(ctx, target);
      const d = pickDeployment(target, str(body?.model));
      if (body !== null && body.model !== d.deployment) return JSON.stringify({ ...body, model: d.deployment });
      return requestBody(ctx, target) ?? '';
    },
    // Errors normalised like chat's; answers and event streams pass through (the chat stream clean-up would drop Responses events).
    response: async (upstream, ctx) =>
      upstream.status < 200 || upstream.status >= 300 ? azureErrorAnswer(upstream, await readErrorJson(upstream), PLUGIN_NAME) : openAIFormatResponse(upstream, ctx),
  };

  // Images and audio at the deployment, as chat: `/openai/deployments/{d}/images/generations?api-version=…`, or
  // `/openai/v1/images/generations` (whose model names the deployment). Azure OpenAI has no moderations.
  const mediaRoutes = Object.fromEntries(
    AZURE_MEDIA.map((name) => [name, openAIMediaRoute(name, (ctx, target) => operationPath(pickDeployment(target, str(effectiveBody(ctx, target)?.model)), MEDIA_ROUTES[name].path.slice(1)))]),
  );

  const provider: Provider = {
    name: PLUGIN_NAME,
    // Its answers name the service tier that served them (`flex`, `priority`), which sets the price (docs/cost.md).
    servesTiers: true,
    baseURL: (target) => `${azureOpenAIOrigin(target)}/openai`,
    authHeaders: (target) => azureAuthHeaders(target),
    prepare: entraPrepare(() => tokens!, defaults),
    routes: { 'chat.completions': route('chat.completions'), completions: route('completions'), embeddings: route('embeddings'), responses: responsesRoute, ...mediaRoutes },
    // Files, batches and fine-tuning jobs: OpenAI's format at /openai/{files,batches,fine_tuning/jobs}, no deployment segment (azure.md §1).
    resources: {
      files: 'openai',
      batches: 'openai',
      fineTuning: 'openai',
      url: (path, target) => resourceURL(target, path),
      // The realtime socket of a deployment (picked as chat picks it): `/openai/v1/realtime?model=<deployment>`, or the
      // preview API's `/openai/realtime?api-version=…&deployment=<deployment>`.
      realtime: 'openai',
      realtimeUrl: (model, target) => {
        const d = pickDeployment(target, model);
        const origin = `${azureOpenAIOrigin(target)}/openai`;
        return isV1(d.apiVersion)
          ? `${origin}/v1/realtime?model=${encodeURIComponent(d.deployment)}`
          : `${origin}/realtime?api-version=${encodeURIComponent(d.apiVersion)}&deployment=${encodeURIComponent(d.deployment)}`;
      },
    },
  };

  return {
    name: PLUGIN_NAME,
    targetFields: AZURE_OPENAI_FIELDS,
    state: [
      { name: 'entra-tokens', scope: 'credential', keyedBy: 'Microsoft Entra access tokens, by tenant, client, scope and the digest of the client secret.' },
    ],
    apply(api) {
      tokens = new EntraTokenCache(tokenSender(api.upstream), authority);
      addShapedRoutes(api, ['chat.completions', 'completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default azureOpenAI;
