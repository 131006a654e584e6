import * as v from 'valibot';
import { addRerankRoute, type GatewayPlugin, invalidBody, parseOptions, RERANK_ROUTE, RerankBodySchema, STAGES } from '../../sdk/index.js';
import { rerankProvider, RERANK_PROVIDERS } from './providers.js';

export const PLUGIN_NAME = 'rerank';

export { RERANK_PROVIDERS, rerankProvider, type RerankProviderRow } from './providers.js';

const OptionsSchema = v.strictObject({
  /** Rerank-only providers this plugin registers (default both). A name already registered by another plugin is left alone. */
  providers: v.optional(v.array(v.picklist(['jina', 'voyage'])), ['jina', 'voyage']),
  /** Default base URL per bundled provider (e.g. a proxy). */
  baseURLs: v.optional(v.record(v.picklist(['jina', 'voyage']), v.pipe(v.string(), v.url()))),
});

export type RerankOptions = v.InferInput<typeof OptionsSchema>;

const parse = v.safeParser(RerankBodySchema);

/**
 * The rerank route (spec, POST /rerank): registers the shaped route, checks
 * its body before any provider is called (a 400 naming the field), and
 * registers the rerank-only providers `jina` and `voyage`. Providers that also
 * chat (`cohere`, `bedrock`) bring their own rerank adapters in their plugins.
 */
export function rerank(options: RerankOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      addRerankRoute(api);
      for (const row of RERANK_PROVIDERS) {
        if (!opts.providers.includes(row.name) || api.providers.has(row.name)) continue;
        const url = opts.baseURLs?.[row.name];
        api.providers.add(row.name, rerankProvider(url === undefined ? row : { ...row, baseURL: url.replace(/\/$/, '') }));
      }
      api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [RERANK_ROUTE] }, (ctx) => {
        const result = parse(ctx.body);
        if (!result.success) throw invalidBody(result.issues);
        return undefined;
      });
    },
  };
}

export default rerank;
