import * as v from 'valibot';
import { ChatCompletionBodySchema, CompletionBodySchema, EmbeddingBodySchema, invalidBody, STAGES, type GatewayPlugin } from '../../sdk/index.js';

export const PLUGIN_NAME = 'validation';

type Parser = (input: unknown) => v.SafeParseResult<v.GenericSchema>;

/** Parsers are built once, by the route whose body they check; each is its own route-filtered tap. */
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
    state: [],
    apply(api) {
      // One tap per shaped route (and the routes that speak its API, e.g. a prompt completion as chat), chosen at boot.
      for (const [route, parse] of PARSERS) {
        api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [route] }, (ctx) => {
          if (ctx.body === null) return undefined;
          const result = parse(ctx.body);
          if (!result.success) throw invalidBody(result.issues);
          return undefined;
        });
      }
    },
  };
}

export default validation;
