import * as v from 'valibot';
import { ChatCompletionBodySchema, CompletionBodySchema, EmbeddingBodySchema, invalidBody, STAGES, type GatewayPlugin, routeApi } from '../../sdk/index.js';

export const PLUGIN_NAME = 'validation';

type Parser = (input: unknown) => v.SafeParseResult<v.GenericSchema>;

/** Parsers are built once; the request path only looks one up by route name. */
const PARSERS: ReadonlyMap<string, Parser> = new Map<string, Parser>([
  ['chat.completions', v.safeParser(ChatCompletionBodySchema) as Parser],
  ['completions', v.safeParser(CompletionBodySchema) as Parser],
  ['embeddings', v.safeParser(EmbeddingBodySchema) as Parser],
]);

/**
 * Checks shaped-route bodies against the spec's fields and limits before any
 * provider is called. A violation is a 400 whose message and `param` name the
 * field. Unknown fields pass through untouched.
 */
export function validation(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    apply(api) {
      api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE }, (ctx) => {
        const parse = PARSERS.get(routeApi(ctx.route!));
        if (parse === undefined || ctx.body === null) return undefined;
        const result = parse(ctx.body);
        if (!result.success) throw invalidBody(result.issues);
        return undefined;
      });
    },
  };
}

export default validation;
