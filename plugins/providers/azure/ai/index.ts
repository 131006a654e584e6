import * as v from 'valibot';
import { addShapedRoutes, fieldSchema as f, parseOptions, type GatewayPlugin, type Provider, type ProviderRoute, type Target, type TargetField } from '../../../../sdk/index.js';
import { azureAuthHeaders, ENTRA_FIELDS, entraPrepare, EntraOptionsSchema } from '../auth.js';
import { EntraTokenCache, tokenSender } from '../entra.js';
import { azureAnswer } from '../normalize.js';
import { azureAIOrigin, azureAIPath, deploymentTypeOf, placementHeaders } from './url.js';

export const PLUGIN_NAME = 'azure-ai';

export { azureAIOrigin, azureAIPath, deploymentTypeOf, placementHeaders, type DeploymentType } from './url.js';

/** The target fields Azure AI reads (the spec's `cloudC_` stand-ins): the endpoint (host), its kind and deployment, and Entra ID. */
export const AZURE_AI_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  azure_region: { schema: f.string(), placement: true, inherit: 'same-provider', aliases: ['cloudC_region'] },
  azure_deployment_name: {
    schema: f.string(),
    inherit: 'same-provider',
    aliases: ['cloudC_deployment_name'],
    combination: ['provider', 'azure_deployment_name', 'azure_deployment_type', 'azure_region', 'azure_api_version'],
  },
  azure_endpoint_name: {
    schema: f.string(),
    placement: true,
    inherit: 'same-provider',
    aliases: ['cloudC_endpoint_name'],
    combination: ['provider', 'azure_endpoint_name', 'azure_deployment_type'],
  },
  azure_api_version: { schema: f.string(), inherit: 'same-provider', aliases: ['cloudC_api_version'] },
  azure_deployment_type: { schema: f.oneOf(['serverless', 'managed']), inherit: 'same-provider', aliases: ['cloudC_deployment_type'] },
  ...ENTRA_FIELDS,
});

const OptionsSchema = v.strictObject({
  /**
   * `extra-parameters` sent to serverless endpoints (the AI Model Inference API
   * refuses unknown body fields by default): `pass-through` forwards them to the
   * model, `drop` removes them, `error` is Azure's default, `none` sends no header.
   * Managed endpoints run their own scoring script and get no header.
   */
  extraParameters: v.optional(v.picklist(['pass-through', 'drop', 'error', 'none']), 'pass-through'),
  /** How the key is sent: `Authorization: Bearer` (default, what both endpoint kinds take) or `api-key`. */
  keyHeader: v.optional(v.picklist(['authorization', 'api-key']), 'authorization'),
  entra: v.optional(EntraOptionsSchema, {}),
});
export type AzureAIOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The `azure-ai` provider (Azure AI Foundry serverless APIs and Azure ML
 * managed online endpoints; shared/providers/azure.md §6–7): chat and
 * embeddings in the OpenAI-like inference format, answers passed through
 * (streams normalised like Azure OpenAI's, errors in the gateway envelope).
 * Target fields: `azure_deployment_type` (`serverless`, the default, or
 * `managed`), `azure_endpoint_name`, `azure_region`, `azure_deployment_name`
 * (managed: the `azureml-model-deployment` header), `azure_api_version`
 * (`?api-version=`), and `api_key` (Bearer) or Entra ID settings as for `azure-openai`.
 */
export function azureAI(options: AzureAIOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const { authority, ...defaults } = opts.entra;
  let tokens: EntraTokenCache | null = null;
  const response = azureAnswer(PLUGIN_NAME);

  const headers = (target: Target): Record<string, string> => {
    const out = placementHeaders(target);
    if (opts.extraParameters !== 'none' && deploymentTypeOf(target) === 'serverless') out['extra-parameters'] = opts.extraParameters;
    return out;
  };
  const route = (operation: 'chat/completions' | 'embeddings'): ProviderRoute => ({ path: (_ctx, target) => azureAIPath(target, operation), headers: (_ctx, target) => headers(target), response });

  const provider: Provider = {
    name: PLUGIN_NAME,
    // `https://{azure_endpoint_name}.{azure_region}.models.ai.azure.com` (serverless) or `….inference.ml.azure.com` (managed), or custom_host.
    baseURL: azureAIOrigin,
    authHeaders: (target) => ({ ...azureAuthHeaders(target, opts.keyHeader), ...placementHeaders(target) }),
    prepare: entraPrepare(() => tokens!, defaults),
    routes: { 'chat.completions': route('chat/completions'), embeddings: route('embeddings') },
  };

  return {
    name: PLUGIN_NAME,
    targetFields: AZURE_AI_FIELDS,
    state: [
      { name: 'entra-tokens', scope: 'credential', keyedBy: 'Microsoft Entra access tokens, by tenant, client, scope and the digest of the client secret.' },
    ],
    apply(api) {
      tokens = new EntraTokenCache(tokenSender(api.upstream), authority);
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default azureAI;
