import type { Target, TargetFields } from '../../sdk/index.js';
import type { GatewayConfig } from './schema.js';

/** Which fields an item of `targets` takes from its parent config, by the fields' declarations. */
export interface Inheritance {
  /** Settings taken whenever the item leaves them unset (retry, cache, timeouts, …). */
  always: readonly string[];
  /** Provider credentials, placement and settings: taken only by an item on the same provider (or naming none). */
  sameProvider: readonly string[];
}

export function inheritanceOf(fields: TargetFields): Inheritance {
  return {
    always: fields.names((f) => f.inherit === 'always'),
    sameProvider: fields.names((f) => f.inherit === 'same-provider'),
  };
}

/**
 * Turns a validated config into the target tree the pipeline runs, once per
 * config: inheritance is resolved here, so the request path only reads
 * settled fields. A leaf with no provider (`passthrough`, or a config of
 * settings only, such as `{ "retry": … }`) gets its provider from the request.
 */
export function buildTarget(config: GatewayConfig, inheritance: Inheritance, parent: Target | null = null): Target {
  const { targets, ...fields } = config as GatewayConfig & { targets?: GatewayConfig[] };
  const t: Target = { ...(fields as Record<string, unknown>) };
  const own = t as Record<string, unknown>;
  if (parent !== null) {
    for (const key of inheritance.always) if (own[key] === undefined && parent[key] !== undefined) own[key] = parent[key];
    const sameProvider = t.provider === undefined || t.provider === parent.provider;
    if (t.provider === undefined && parent.provider !== undefined) t.provider = parent.provider;
    if (sameProvider) for (const key of inheritance.sameProvider) if (own[key] === undefined && parent[key] !== undefined) own[key] = parent[key];
    const merged = mergeOverrides(parent.override_params, t.override_params);
    if (merged !== undefined) t.override_params = merged;
  }
  if (targets !== undefined) {
    t.targets = targets.map((child) => buildTarget(child, inheritance, t));
  }
  return t;
}

function mergeOverrides(parent: unknown, child: unknown): Record<string, unknown> | undefined {
  if (parent === undefined) return child as Record<string, unknown> | undefined;
  if (child === undefined) return parent as Record<string, unknown>;
  return { ...(parent as Record<string, unknown>), ...(child as Record<string, unknown>) };
}

/**
 * True for a config whose provider comes from the request's headers: `passthrough`, or one that names
 * no provider, virtual key or strategy, nor sets a field that brings its own target (`providing`: the
 * fields declared `providesTarget`, such as a stored prompt's `prompt_id`).
 */
export function needsHeaderProvider(target: Target, providing: readonly string[] = []): boolean {
  if (target.passthrough === true) return true;
  if (target.provider !== undefined || target.virtual_key !== undefined || target.strategy !== undefined) return false;
  for (const field of providing) if (target[field] !== undefined) return false;
  return true;
}

/** The settings of a passthrough (or settings-only) config, laid over the target the request's headers select. */
export function passthroughTarget(config: Target, fromHeaders: Target): Target {
  const { passthrough: _passthrough, ...settings } = config;
  return { ...fromHeaders, ...settings, provider: fromHeaders.provider };
}
