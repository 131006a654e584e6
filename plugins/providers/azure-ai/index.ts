import * as v from 'valibot';
import { parseOptions, type GatewayPlugin, type Provider, type ProviderRoute, type Target } from '../../../core/index.js';
import { addShapedRoutes } from '../openai-format/routes.js';
import { AZURE_STAGE, azureAuthHeaders, azurePreparer, EntraOptionsSchema } from '../azure-openai/index.js';
import { EntraTokenCache, tokenSender } from '../azure-openai/entra.js';
import { azureAnswer } from '../azure-openai/normalize.js';
import { azureAIOrigin, azureAIPath, deploymentTypeOf, placementHeaders } from './url.js';

export const PLUGIN_NAME = 'azure-ai';

export { azureAIOrigin, azureAIPath, deploymentTypeOf, placementHeaders, type DeploymentType } from './url.js';

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
  const bearer = new WeakMap<Target, string>();

  const response = azureAnswer(PLUGIN_NAME);

  const headers = (target: Target): Record<string, string> => {
    const out = placementHeaders(target);
    if (opts.extraParameters !== 'none' && deploymentTypeOf(target) === 'serverless') out['extra-parameters'] = opts.extraParameters;
    return out;
  };
  const route = (operation: 'chat/completions' | 'embeddings'): ProviderRoute => ({ path: (_ctx, target) => azureAIPath(target, operation), headers: (_ctx, target) => headers(target), response });

  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: 'https://{azure_endpoint_name}.{azure_region}.models.ai.azure.com',
    authHeaders: (target) => ({ ...azureAuthHeaders(target, bearer.get(target), opts.keyHeader), ...placementHeaders(target) }),
    routes: { 'chat.completions': route('chat/completions'), embeddings: route('embeddings') },
  };

  return {
    name: PLUGIN_NAME,
    apply(api) {
      const { authority, ...defaults } = opts.entra;
      const tokens = new EntraTokenCache(tokenSender(api.upstream), authority);
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
      api.addInterceptor(PLUGIN_NAME, azurePreparer(PLUGIN_NAME, azureAIOrigin, tokens, defaults, bearer), AZURE_STAGE);
    },
  };
}

export default azureAI;
