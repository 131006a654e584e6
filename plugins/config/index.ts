import * as v from 'valibot';
import { GatewayError, parseOptions, plainObject, STAGE, type GatewayPlugin, type RequestContext, type Target } from '../../core/index.js';
import { targetFromHeaders } from '../provider-headers/index.js';
import { parseConfig } from './schema.js';
import { buildTarget, needsHeaderProvider, passthroughTarget } from './tree.js';

export const PLUGIN_NAME = 'config';
export { parseConfig, type GatewayConfig } from './schema.js';

/** Inline configs kept parsed, keyed by the header text; clients reuse a handful of configs. */
const CACHE_SIZE = 512;

const OptionsSchema = v.strictObject({
  /** Saved configs by id, usable as `x-gateway-config: <id>`. */
  configs: v.optional(v.record(v.string(), plainObject())),
  /** Config for requests that send none: a saved config id or an inline config. */
  default: v.optional(v.union([v.string(), plainObject()])),
});

export type ConfigOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The config carrier. `x-gateway-config` holds inline JSON or the id of a
 * saved config; without it the server-wide default applies, if any. The
 * config becomes the request's target (a strategy tree or a single
 * provider). It wins over `x-gateway-provider`, except with
 * `passthrough: true` or a config that names no provider (settings only),
 * where the request's headers pick the provider and the config adds its settings.
 */
export function config(options: ConfigOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const saved = new Map<string, Target>();
  for (const [id, body] of Object.entries(opts.configs ?? {})) saved.set(id, bootTarget(body, `saved config "${id}"`));
  let fallback: Target | null = null;
  if (typeof opts.default === 'string') {
    fallback = saved.get(opts.default) ?? null;
    if (fallback === null) throw new Error(`Invalid options for ${PLUGIN_NAME}: default: no saved config "${opts.default}"`);
  } else if (opts.default !== undefined) {
    fallback = bootTarget(opts.default, 'the default config');
  }
  const inline = new Map<string, Target>();

  const fromHeader = (raw: string): Target => {
    const text = raw.trim();
    if (!text.startsWith('{')) {
      const found = saved.get(text);
      if (found === undefined) throw new GatewayError('invalid_header', `Unknown config id "${text.slice(0, 64)}" in x-gateway-config.`, { param: 'x-gateway-config' });
      return found;
    }
    const cached = inline.get(text);
    if (cached !== undefined) return cached;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new GatewayError('invalid_header', 'x-gateway-config is not valid JSON (send a JSON object or a saved config id).', { param: 'x-gateway-config' });
    }
    const target = buildTarget(parseConfig(json));
    if (inline.size >= CACHE_SIZE) inline.delete(inline.keys().next().value!);
    inline.set(text, target);
    return target;
  };

  return {
    name: PLUGIN_NAME,
    apply(api) {
      api.hooks.resolveProvider.tap({ name: PLUGIN_NAME, stage: STAGE.EARLY }, (ctx: RequestContext) => {
        const header = ctx.header('x-gateway-config');
        const target = header !== undefined && header !== '' ? fromHeader(header) : fallback;
        if (target === null) return undefined;
        if (!needsHeaderProvider(target)) return target;
        const selected = targetFromHeaders(ctx, api.providers);
        if (selected === undefined) {
          throw new GatewayError('provider_required', 'The config names no provider: select it with x-gateway-provider (and Authorization: Bearer <provider key>).', {
            param: 'x-gateway-provider',
          });
        }
        return passthroughTarget(target, selected);
      });
    },
  };
}

/** Parses a config given at boot; a bad one stops start-up with its name and the offending path. */
function bootTarget(body: unknown, what: string): Target {
  try {
    return buildTarget(parseConfig(body));
  } catch (err) {
    throw new Error(`Invalid options for ${PLUGIN_NAME}: ${what}: ${(err as Error).message}`);
  }
}

export default config;
