import * as v from 'valibot';
import {
  CONFIG_SOURCE,
  GatewayError,
  GUARDRAIL_VALIDATOR,
  HEADER_TARGETS,
  parseOptions,
  plainObject,
  STAGES,
  type ConfigSource,
  type GatewayPlugin,
  type HeaderTargets,
  type RequestContext,
  type Target,
} from '../../sdk/index.js';
import { IDENTITY } from '../../sdk/admin/index.js';
import { CONFIG_FIELDS } from './fields.js';
import { createConfigParser, type ConfigParser } from './parser.js';
import { savedConfigs } from './store/index.js';
import { needsHeaderProvider, passthroughTarget } from './tree.js';

export const PLUGIN_NAME = 'config';
export { CONFIG_FIELDS, MODES } from './fields.js';
export { createConfigParser, MAX_CONFIG_BYTES, type ConfigLimits, type ConfigParser } from './parser.js';
export type { GatewayConfig } from './schema.js';

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
 * where the request's headers pick the provider (through the
 * `provider-headers` plugin) and the config adds its settings. A config that
 * names no provider but sets a field declared `providesTarget` (`prompt_id`)
 * is returned as it is: that field's plugin supplies the target.
 *
 * The schema is strict and built once, at boot, from every target field the
 * core and the loaded plugins declare. With the control plane loaded, each
 * workspace keeps saved configs of its own too (admin routes `/configs`,
 * versioned, credentials sealed; see store/), offered under `CONFIG_SOURCE`
 * (the prompts plugin reads it as well); they are checked with the same
 * schema. Without the control plane, another plugin may offer `CONFIG_SOURCE`.
 */
export function config(options: ConfigOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    // Routing headers it reads: without a plugin that does, a request sending one is refused (core/routing-headers.ts).
    headers: ['x-gateway-config'],
    targetFields: CONFIG_FIELDS,
    // Identity for the workspaces' saved configs; the guardrail checks' credential parameters, sealed in them; the saved
    // configs themselves (its own store provides them when the control plane is loaded); the provider headers' targets.
    uses: [IDENTITY, GUARDRAIL_VALIDATOR, CONFIG_SOURCE, HEADER_TARGETS],
    state: [
      { name: 'saved-configs', scope: 'workspace', keyedBy: 'Saved configs as the request path reads them: keyed by the workspace the request acts in and the config named.' },
      { name: 'inline-configs', scope: 'organisation', keyedBy: 'x-gateway-config headers parsed, by their text: the same text is the same config for anyone, and it holds no answer.' },
    ],
    apply(api) {
      // Every field is declared before any plugin is applied, so the schema is complete here.
      const parser = createConfigParser(api.targetFields, { maxDepth: api.options.maxJsonDepth });
      if (api.provided(IDENTITY)) savedConfigs(api, parser);
      const saved = new Map<string, Target>();
      for (const [id, body] of Object.entries(opts.configs ?? {})) saved.set(id, bootTarget(parser, body, `saved config "${id}"`));
      let fallback: Target | null = null;
      if (typeof opts.default === 'string') {
        fallback = saved.get(opts.default) ?? null;
        if (fallback === null) throw new Error(`Invalid options for ${PLUGIN_NAME}: default: no saved config "${opts.default}"`);
      } else if (opts.default !== undefined) {
        fallback = bootTarget(parser, opts.default, 'the default config');
      }
      const inline = new Map<string, Target>();
      const providing = api.targetFields.names((f) => f.providesTarget === true);

      let source: ConfigSource | undefined;
      let headers: HeaderTargets | undefined;
      api.onReady(() => {
        source = api.tryResolve(CONFIG_SOURCE);
        headers = api.tryResolve(HEADER_TARGETS);
      });

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
          if (source !== undefined) return savedConfig(ctx, text);
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
        const target = parser.parse(json);
        if (inline.size >= CACHE_SIZE) inline.delete(inline.keys().next().value!);
        inline.set(text, target);
        return target;
      };

      const select = (ctx: RequestContext, target: Target | null): Target | undefined => {
        if (target === null) return undefined;
        if (!needsHeaderProvider(target, providing)) return target;
        const selected = headers?.fromHeaders(ctx);
        if (selected === undefined) {
          throw new GatewayError('provider_required', 'The config names no provider: select it with x-gateway-provider (and Authorization: Bearer <provider key>).', {
            param: 'x-gateway-provider',
          });
        }
        return passthroughTarget(target, selected);
      };
      api.hooks.resolveProvider.tapPromise({ name: PLUGIN_NAME, stage: STAGES.resolveProvider.CONFIG }, async (ctx: RequestContext) => {
        const header = ctx.header('x-gateway-config');
        return select(ctx, header !== undefined && header !== '' ? await fromHeader(ctx, header) : fallback);
      });
    },
  };
}

/** Parses a config given at boot; a bad one stops start-up with its name and the offending path. */
function bootTarget(parser: ConfigParser, body: unknown, what: string): Target {
  try {
    return parser.parse(body);
  } catch (err) {
    throw new Error(`Invalid options for ${PLUGIN_NAME}: ${what}: ${(err as Error).message}`);
  }
}

export default config;
