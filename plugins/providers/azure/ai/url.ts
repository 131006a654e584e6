import { GatewayError, type Target } from '../../../../sdk/index.js';

/**
 * Azure AI Foundry / Azure ML endpoints (shared/providers/azure.md §6–7):
 * - `serverless`: `https://{azure_endpoint_name}.{azure_region}.models.ai.azure.com`
 *   + `/chat/completions`, `/embeddings` (AI Model Inference API);
 * - `managed`: `https://{azure_endpoint_name}.{azure_region}.inference.ml.azure.com/score`,
 *   with `azureml-model-deployment: {azure_deployment_name}` pinning the deployment.
 * `azure_api_version`, when set, is sent as `?api-version=`. `custom_host`
 * replaces the scheme and host.
 */

export type DeploymentType = 'serverless' | 'managed';

const bad = (param: string, message: string) => new GatewayError('invalid_request', `Azure AI: ${message}`, { param });
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const HOST_LABEL = /^[a-zA-Z0-9][a-zA-Z0-9-]*$/;

/** `azure_deployment_type`, default `serverless`. */
export function deploymentTypeOf(target: Target): DeploymentType {
  const type = target.azure_deployment_type ?? 'serverless';
  if (type !== 'serverless' && type !== 'managed') throw bad('azure_deployment_type', 'azure_deployment_type must be serverless or managed.');
  return type;
}

function label(target: Target, field: 'azure_endpoint_name' | 'azure_region'): string {
  const value = str(target[field]);
  if (value === undefined) throw bad(field, `${field} is required (or custom_host).`);
  if (!HOST_LABEL.test(value)) throw bad(field, `${field} may hold only letters, digits and dashes.`);
  return value;
}

/** The origin: `custom_host` when set, else the endpoint's host for its deployment type. */
export function azureAIOrigin(target: Target): string {
  const custom = str(target.custom_host);
  if (custom !== undefined) return custom.replace(/\/+$/, '');
  const endpoint = label(target, 'azure_endpoint_name');
  const region = label(target, 'azure_region');
  return deploymentTypeOf(target) === 'managed' ? `https://${endpoint}.${region}.inference.ml.azure.com` : `https://${endpoint}.${region}.models.ai.azure.com`;
}

/** The path after the origin: `/chat/completions` or `/embeddings` (serverless), `/score` (managed), plus `?api-version=`. */
export function azureAIPath(target: Target, operation: 'chat/completions' | 'embeddings'): string {
  const version = str(target.azure_api_version);
  const path = deploymentTypeOf(target) === 'managed' ? '/score' : `/${operation}`;
  return version === undefined ? path : `${path}?api-version=${encodeURIComponent(version)}`;
}

/** Headers the placement needs: `azureml-model-deployment` for a managed endpoint with a deployment name. */
export function placementHeaders(target: Target): Record<string, string> {
  if (deploymentTypeOf(target) !== 'managed') return {};
  const name = str(target.azure_deployment_name);
  return name === undefined ? {} : { 'azureml-model-deployment': name };
}
