import { GatewayError, type Target } from '../../../../sdk/index.js';

/**
 * Azure OpenAI URLs (shared/providers/azure.md §1–2):
 * `https://{resource_name}.openai.azure.com/openai/deployments/{deployment}/{operation}?api-version={version}`,
 * or, with `api_version: "v1"`, `…/openai/v1/{operation}` with the deployment
 * as the body's `model`. `custom_host` replaces `https://{resource_name}.openai.azure.com`.
 */

const bad = (param: string, message: string) => new GatewayError('invalid_request', `Azure OpenAI: ${message}`, { param });

export interface AzureDeployment {
  deployment: string;
  apiVersion: string;
}

interface DeploymentEntry {
  deployment_id?: unknown;
  alias?: unknown;
  api_version?: unknown;
  is_default?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The deployment for a request's `model`:
 * 1. the `deployments` entry whose `alias` is the model;
 * 2. else the entry with `is_default: true`;
 * 3. else the target's own `deployment_id` (with `api_version`);
 * 4. else, with no `deployments` list, the model itself as the deployment name (as Azure's SDKs do).
 * The API version is the entry's `api_version`, else the target's. Both are required.
 */
export function pickDeployment(target: Target, model: string | null | undefined): AzureDeployment {
  const list = Array.isArray(target.deployments) ? (target.deployments as DeploymentEntry[]) : [];
  const entry = (model ? list.find((d) => d.alias === model) : undefined) ?? list.find((d) => d.is_default === true);
  let deployment = str(entry?.deployment_id) ?? str(target.deployment_id);
  if (deployment === undefined) {
    if (list.length > 0) throw bad('model', `no deployment has the alias "${String(model ?? '')}" and none is marked is_default.`);
    deployment = str(model ?? undefined);
  }
  if (deployment === undefined) throw bad('deployment_id', 'deployment_id is required (or a model naming the deployment).');
  const apiVersion = str(entry?.api_version) ?? str(target.api_version);
  if (apiVersion === undefined) throw bad('api_version', 'api_version is required (e.g. 2024-10-21, or v1).');
  return { deployment, apiVersion };
}

/** `https://{resource_name}.openai.azure.com`, or `custom_host` without a trailing slash or `/openai`. */
export function azureOpenAIOrigin(target: Target): string {
  const custom = str(target.custom_host);
  if (custom !== undefined) return custom.replace(/\/+$/, '').replace(/\/openai$/, '');
  const resource = str(target.resource_name);
  if (resource === undefined) throw bad('resource_name', 'resource_name is required (or custom_host).');
  if (!/^[a-zA-Z0-9][a-zA-Z0-9-]*$/.test(resource)) throw bad('resource_name', 'resource_name may hold only letters, digits and dashes.');
  return `https://${resource}.openai.azure.com`;
}

/** Whether the version selects the v1 API (no api-version query, deployment in the body). */
export const isV1 = (apiVersion: string) => apiVersion === 'v1';

/** The first dated API version known to accept `stream_options.include_usage`. */
const STREAM_OPTIONS_SINCE = '2024-08-01';

/**
 * Whether an API version takes `stream_options` (azure.md §8: it came with a dated version, and older
 * ones refuse unknown fields with a 400): the v1 API, and dated versions from `2024-08-01-preview` on
 * (previews and GA alike: `2024-09-01-preview`, `2024-10-21`, `2025-04-01-preview`, …). Earlier ones
 * (`2024-06-01` and before) are not asked for usage, and their streams are counted as before.
 */
export function acceptsStreamOptions(apiVersion: string): boolean {
  if (isV1(apiVersion)) return true;
  // `YYYY-MM-DD…`: compared as text, which orders dates.
  return apiVersion.length >= 10 && apiVersion.charCodeAt(4) === 45 && apiVersion.charCodeAt(7) === 45 && apiVersion.slice(0, 10) >= STREAM_OPTIONS_SINCE;
}

/** The path after `{origin}/openai` for an operation (`chat/completions`, `completions`, `embeddings`). */
export function operationPath(d: AzureDeployment, operation: string): string {
  if (isV1(d.apiVersion)) return `/v1/${operation}`;
  return `/deployments/${encodeURIComponent(d.deployment)}/${operation}?api-version=${encodeURIComponent(d.apiVersion)}`;
}

/** The full URL of an operation: `{origin}/openai` + {@link operationPath}. */
export function azureOpenAIURL(target: Target, model: string | null | undefined, operation: string): string {
  return `${azureOpenAIOrigin(target)}/openai${operationPath(pickDeployment(target, model), operation)}`;
}

/**
 * The URL of a resource API path (`/files`, `/batches/b1/cancel`, `/fine_tuning/jobs?limit=2`), which has no
 * deployment segment: `{origin}/openai{path}?api-version=…`, or `{origin}/openai/v1{path}` for the v1 API.
 * The version is the target's `api_version`, else that of its default (or only) deployment.
 */
export function resourceURL(target: Target, path: string): string {
  const list = Array.isArray(target.deployments) ? (target.deployments as DeploymentEntry[]) : [];
  const entry = list.find((d) => d.is_default === true) ?? (list.length === 1 ? list[0] : undefined);
  const apiVersion = str(target.api_version) ?? str(entry?.api_version);
  if (apiVersion === undefined) throw bad('api_version', 'api_version is required for files, batches and fine-tuning (e.g. 2024-10-21, or v1).');
  const origin = `${azureOpenAIOrigin(target)}/openai`;
  if (isV1(apiVersion)) return `${origin}/v1${path}`;
  return `${origin}${path}${path.includes('?') ? '&' : '?'}api-version=${encodeURIComponent(apiVersion)}`;
}
