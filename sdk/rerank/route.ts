import type { PluginAPI } from '../../core/index.js';

/** The route name provider adapters key their rerank adapter by (`provider.routes.rerank`). */
export const RERANK_ROUTE = 'rerank';

/**
 * Adds `POST {basePath}/rerank` (a provider route named `rerank`) unless a
 * plugin already did: the `rerank` plugin and every provider that reranks call it.
 */
export function addRerankRoute(api: PluginAPI): void {
  const path = api.options.basePath + '/rerank';
  if (!api.routes.has('POST', path)) api.routes.add({ name: RERANK_ROUTE, method: 'POST', path, kind: 'provider', body: 'json' });
}
