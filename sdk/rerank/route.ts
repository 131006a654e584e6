import type { PluginAPI, RouteDoc } from '../../core/index.js';
import { RerankBodySchema } from './schema.js';

/** The route name provider adapters key their rerank adapter by (`provider.routes.rerank`). */
export const RERANK_ROUTE = 'rerank';

const DOC: RouteDoc = Object.freeze({
  summary: 'Rerank documents',
  description: 'Orders `documents` by relevance to `query` (Cohere, Bedrock, Jina, Voyage), in one answer shape whatever the provider.',
  tags: ['Inference'],
  scope: 'completions.write',
  body: RerankBodySchema,
});

/**
 * Adds `POST {basePath}/rerank` (a provider route named `rerank`) unless a
 * plugin already did: the `rerank` plugin and every provider that reranks call it.
 */
export function addRerankRoute(api: PluginAPI): void {
  const path = api.options.basePath + '/rerank';
  if (!api.routes.has('POST', path)) api.routes.add({ name: RERANK_ROUTE, method: 'POST', path, kind: 'provider', body: 'json', doc: DOC });
}
