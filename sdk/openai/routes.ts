import type { PluginAPI, RouteDefinition, RouteDoc } from '../../core/index.js';
import { ChatCompletionBodySchema, CompletionBodySchema, EmbeddingBodySchema } from './schema.js';

/** The OpenAI-shaped routes of the uniform API, by route name; paths are relative to the base path (`/v1`). */
export const OPENAI_ROUTES = Object.freeze({
  'chat.completions': { method: 'POST', path: '/chat/completions' },
  completions: { method: 'POST', path: '/completions' },
  embeddings: { method: 'POST', path: '/embeddings' },
} as const);

/** The name of a shaped OpenAI route: `chat.completions`, `completions` or `embeddings`. */
export type OpenAIRouteName = keyof typeof OPENAI_ROUTES;

/** The tag the inference routes are listed under in the API reference. */
export const INFERENCE_TAG = 'Inference';

const ROUTING =
  'The provider is chosen by the `x-gateway-config` header (a config object or a saved config id), or by `x-gateway-provider` with the provider key in `Authorization` (docs/configuration.md).';

/** What the API reference says of each shaped route; the body schemas are the ones the `validation` plugin checks with. */
const DOCS: Readonly<Record<OpenAIRouteName, RouteDoc>> = Object.freeze({
  'chat.completions': {
    summary: 'Create a chat completion',
    description: `OpenAI's chat completions, for every provider; \`stream: true\` answers server-sent events ending with \`data: [DONE]\`. ${ROUTING}`,
    tags: [INFERENCE_TAG],
    scope: 'completions.write',
    body: ChatCompletionBodySchema,
    responseTypes: ['application/json', 'text/event-stream'],
  },
  completions: {
    summary: 'Create a text completion (legacy)',
    description: `OpenAI's legacy text completions. ${ROUTING}`,
    tags: [INFERENCE_TAG],
    scope: 'completions.write',
    body: CompletionBodySchema,
    responseTypes: ['application/json', 'text/event-stream'],
  },
  embeddings: {
    summary: 'Create embeddings',
    description: `OpenAI's embeddings, for every provider that embeds. ${ROUTING}`,
    tags: [INFERENCE_TAG],
    scope: 'completions.write',
    body: EmbeddingBodySchema,
  },
});

/**
 * Adds the shaped routes a provider serves. Several providers serve the same
 * routes, so a route already added by another plugin is left as it is.
 */
export function addShapedRoutes(api: PluginAPI, names: readonly OpenAIRouteName[]): void {
  for (const name of names) {
    const spec = OPENAI_ROUTES[name];
    const route: RouteDefinition = { name, method: spec.method, path: api.options.basePath + spec.path, kind: 'provider', body: 'json', doc: DOCS[name] };
    if (name === 'chat.completions') route.frontDoor = 'chat';
    if (!api.routes.has(route.method, route.path)) api.routes.add(route);
  }
}
