import * as v from 'valibot';
import { GatewayError, parseOptions, plainObject, STAGE, type GatewayPlugin, type RequestContext, type Target } from '../../core/index.js';
import { targetFromHeaders } from '../provider-headers/index.js';
import { parseConfig } from './schema.js';
import { buildTarget, needsHeaderProvider, passthroughTarget } from './tree.js';

export const PLUGIN_NAME = 'config';
export { parseConfig, type GatewayConfig } from './schema.js';
export { buildTarget } from './tree.js';

/**
 * Token of an optional source of saved configs beyond the server config's
 * (the control plane provides one). Asked for ids the server config does not know.
 */
export const CONFIG_SOURCE = Symbol.for('gateway.config-source');

/** Finds a saved config by id for a request (scoped to its caller); undefined when unknown. */
export interface ConfigSource {
  find(ctx: RequestContext, id: string): Promise<Target | undefined>;
}

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

  let source: ConfigSource | null = null;
  const unknownId = (id: string) => new GatewayError('not_found', `Unknown config id "${id.slice(0, 64)}" in x-gateway-config.`, { param: 'x-gateway-config' });
  const savedConfig = async (ctx: RequestContext, id: string): Promise<Target> => {
    const found = await source!.find(ctx, id);
    if (found === undefined) throw unknownId(id);
    return found;
  };

  const fromHeader = (ctx: RequestContext, raw: string): Target | Promise<Target> => {
    const text = raw.trim();
    if (!text.startsWith('{')) {
      const found = saved.get(text);
      if (found !== undefined) return found;
      if (source !== null) return savedConfig(ctx, text);
      throw unknownId(text);
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
      api.onReady(() => {
        try {
          source = api.resolve<ConfigSource>(CONFIG_SOURCE);
        } catch {
          source = null;
        }
      });
      const select = (ctx: RequestContext, target: Target | null): Target | undefined => {
        if (target === null) return undefined;
        if (!needsHeaderProvider(target)) return target;
        const selected = targetFromHeaders(ctx, api.providers);
        if (selected === undefined) {
          throw new GatewayError('provider_required', 'The config names no provider: select it with x-gateway-provider (and Authorization: Bearer <provider key>).', {
            param: 'x-gateway-provider',
          });
        }
        return passthroughTarget(target, selected);
      };
      api.hooks.resolveProvider.tapPromise({ name: PLUGIN_NAME, stage: STAGE.EARLY }, async (ctx: RequestContext) => {
        const header = ctx.header('x-gateway-config');
        return select(ctx, header !== undefined && header !== '' ? await fromHeader(ctx, header) : fallback);
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
