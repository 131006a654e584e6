import { GatewayError, type Target } from '../../../sdk/index.js';

/**
 * Vertex AI URLs (shared/providers/vertex.md §1, §7). The host depends on the
 * region: `{region}-aiplatform.googleapis.com`, `aiplatform.googleapis.com`
 * for `global`, `aiplatform.{us|eu}.rep.googleapis.com` for the multi-regions.
 * A target's `custom_host` replaces that scheme-and-host part (tests, proxies).
 */

const bad = (param: string, message: string) => new GatewayError('invalid_request', `Vertex AI: ${message}`, { param });

/** `https://{host}` for a region, before any `custom_host`. */
export function regionOrigin(region: string): string {
  if (region === 'global') return 'https://aiplatform.googleapis.com';
  if (region === 'us' || region === 'eu') return `https://aiplatform.${region}.rep.googleapis.com`;
  return `https://${region}-aiplatform.googleapis.com`;
}

/** The target's region: `vertex_region`, required, letters, digits and dashes only. */
export function regionOf(target: Target): string {
  const region = target.vertex_region;
  if (typeof region !== 'string' || region === '') throw bad('vertex_region', 'vertex_region is required (e.g. us-central1 or global).');
  if (!/^[a-z0-9-]+$/.test(region)) throw bad('vertex_region', 'vertex_region may hold only lower-case letters, digits and dashes.');
  return region;
}

/** The target's project: `vertex_project_id`, else the service account's `project_id`. */
export function projectOf(target: Target): string {
  const sa = target.vertex_service_account_json as { project_id?: unknown } | undefined;
  const project = typeof target.vertex_project_id === 'string' && target.vertex_project_id !== '' ? target.vertex_project_id : sa?.project_id;
  if (typeof project !== 'string' || project === '') throw bad('vertex_project_id', 'vertex_project_id is required (or a service account with project_id).');
  if (!/^[A-Za-z0-9.:_-]+$/.test(project)) throw bad('vertex_project_id', 'vertex_project_id may hold only letters, digits and . : _ -.');
  return project;
}

/** The origin requests go to: `custom_host` (no trailing slash) when set, else the region's host. */
export function vertexOrigin(target: Target): string {
  const custom = target.custom_host;
  if (typeof custom === 'string' && custom !== '') return custom.replace(/\/+$/, '');
  return regionOrigin(regionOf(target));
}

/** `/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{verb}`. */
export function modelPath(target: Target, publisher: 'google' | 'anthropic', model: string, verb: string): string {
  return `/v1/projects/${projectOf(target)}/locations/${regionOf(target)}/publishers/${publisher}/models/${model}:${verb}`;
}
