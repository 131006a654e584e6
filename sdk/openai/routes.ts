import type { PluginAPI, RouteDefinition } from '../../core/index.js';

/** The OpenAI-shaped routes of the uniform API, by route name; paths are relative to the base path (`/v1`). */
export const OPENAI_ROUTES = Object.freeze({
  'chat.completions': { method: 'POST', path: '/chat/completions' },
  completions: { method: 'POST', path: '/completions' },
  embeddings: { method: 'POST', path: '/embeddings' },
} as const);

export type OpenAIRouteName = keyof typeof OPENAI_ROUTES;

/**
 * Adds the shaped routes a provider serves. Several providers serve the same
 * routes, so a route already added by another plugin is left as it is.
 */
export function addShapedRoutes(api: PluginAPI, names: readonly OpenAIRouteName[]): void {
  for (const name of names) {
    const spec = OPENAI_ROUTES[name];
    const route: RouteDefinition = { name, method: spec.method, path: api.options.basePath + spec.path, kind: 'provider', body: 'json' };
    if (name === 'chat.completions') route.frontDoor = 'chat';
    if (!api.routes.has(route.method, route.path)) api.routes.add(route);
  }
}
