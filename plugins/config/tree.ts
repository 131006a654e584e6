import type { Target } from '../../core/index.js';
import type { GatewayConfig } from './schema.js';

/** Settings a child target takes from its parent when it leaves them unset. */
const INHERITED = ['retry', 'cache', 'request_timeout', 'cb_config', 'forward_headers', 'strict_reference_compliance'] as const;

/** Provider credentials and placement. Inherited only by a child on the same provider (or one naming none). */
const CREDENTIALS = [
  'api_key',
  'custom_host',
  'virtual_key',
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_region',
  'aws_session_token',
  'vertex_project_id',
  'vertex_region',
  'vertex_service_account_json',
  'azure_region',
  'azure_deployment_name',
  'azure_deployment_type',
  'azure_endpoint_name',
  'azure_api_version',
  'azure_entra_scope',
  'openai_organization',
  'openai_project',
  'resource_name',
  'deployment_id',
  'api_version',
  'deployments',
] as const;

/**
 * Turns a validated config into the target tree the pipeline runs, once per
 * config: inheritance is resolved here, so the request path only reads
 * settled fields. A leaf with no provider (`passthrough`, or a config of
 * settings only, such as `{ "retry": … }`) gets its provider from the request.
 */
export function buildTarget(config: GatewayConfig, parent: Target | null = null, where = ''): Target {
  const { targets, ...fields } = config as GatewayConfig & { targets?: GatewayConfig[] };
  const t: Target = { ...(fields as Record<string, unknown>) };
  const own = t as Record<string, unknown>;
  if (parent !== null) {
    for (const key of INHERITED) if (own[key] === undefined && parent[key] !== undefined) own[key] = parent[key];
    const sameProvider = t.provider === undefined || t.provider === parent.provider;
    if (t.provider === undefined && parent.provider !== undefined) t.provider = parent.provider;
    if (sameProvider) for (const key of CREDENTIALS) if (own[key] === undefined && parent[key] !== undefined) own[key] = parent[key];
    const merged = mergeOverrides(parent.override_params, t.override_params);
    if (merged !== undefined) t.override_params = merged;
  }
  if (targets !== undefined) {
    t.targets = targets.map((child, i) => buildTarget(child, t, `${where}targets[${i}].`));
  }
  return t;
}

function mergeOverrides(parent: unknown, child: unknown): Record<string, unknown> | undefined {
  if (parent === undefined) return child as Record<string, unknown> | undefined;
  if (child === undefined) return parent as Record<string, unknown>;
  return { ...(parent as Record<string, unknown>), ...(child as Record<string, unknown>) };
}

/** True for a config whose provider comes from the request's headers. */
export function needsHeaderProvider(target: Target): boolean {
  return target.passthrough === true || (target.provider === undefined && target.virtual_key === undefined && target.strategy === undefined);
}

/** The settings of a passthrough (or settings-only) config, laid over the target the request's headers select. */
export function passthroughTarget(config: Target, fromHeaders: Target): Target {
  const { passthrough: _passthrough, ...settings } = config;
  return { ...fromHeaders, ...settings, provider: fromHeaders.provider };
}
