import {
  isObject,
  documentTexts,
  extraParameters,
  genericErrorAnswer,
  type Provider,
  type ProviderRoute,
  rankedIndexes,
  readJson,
  type RequestContext,
  rerankAnswer,
  rerankBody,
  type Target,
  upstreamModel,
  type UpstreamResponse,
} from '../../sdk/index.js';

type Json = Record<string, unknown>;

/**
 * Rerank-only providers registered by the `rerank` plugin, as data plus one
 * small adapter each (shared/providers/cohere.md §3). Both take
 * `Authorization: Bearer <api_key>` and answer `{results|data: [{index,
 * relevance_score}], usage: {total_tokens}}`; Voyage calls `top_n` `top_k`.
 * Documents are never asked back: the gateway re-attaches the request's text.
 */
export interface RerankProviderRow {
  name: 'jina' | 'voyage';
  baseURL: string;
  /** Builds the native body from the gateway's rerank body. */
  body(body: Json, model: string, documents: string[]): Json;
  /** The array the results come in. */
  resultsField: 'results' | 'data';
}

/**
 * The body both take: the model, the query, the documents' texts and no documents back; the gateway's
 * `top_n` under the provider's name for it; `own` fields; then the request's extra parameters.
 */
function nativeBody(body: Json, model: string, documents: string[], topField: 'top_n' | 'top_k', own: Json = {}): Json {
  const out: Json = { model, query: body.query, documents, return_documents: false };
  if (typeof body.top_n === 'number') out[topField] = body.top_n;
  return { ...out, ...own, ...extraParameters(body) };
}

export const RERANK_PROVIDERS: readonly RerankProviderRow[] = Object.freeze([
  {
    name: 'jina',
    baseURL: 'https://api.jina.ai/v1',
    resultsField: 'results',
    body: (body, model, documents) => nativeBody(body, model, documents, 'top_n'),
  },
  {
    name: 'voyage',
    baseURL: 'https://api.voyageai.com/v1',
    resultsField: 'data',
    body: (body, model, documents) => nativeBody(body, model, documents, 'top_k', typeof body.truncation === 'boolean' ? { truncation: body.truncation } : {}),
  },
]);

/** The provider adapter for one row: rerank, plus credentials for the generic proxy (embeddings etc.). */
export function rerankProvider(row: RerankProviderRow): Provider {
  const route: ProviderRoute = {
    path: '/rerank',
    body: (ctx: RequestContext, target: Target) => {
      const body = rerankBody(ctx, target);
      return JSON.stringify(row.body(body, upstreamModel(body, row.name), documentTexts(body)));
    },
    response: async (upstream: UpstreamResponse, ctx: RequestContext, target: Target) => {
      if (upstream.status < 200 || upstream.status >= 300) return genericErrorAnswer(upstream, row.name);
      const json = await readJson(upstream);
      const j = isObject(json) ? json : {};
      const usage = isObject(j.usage) ? j.usage : {};
      return rerankAnswer(upstream, ctx, target, {
        provider: row.name,
        model: typeof j.model === 'string' && j.model !== '' ? j.model : upstreamModel(rerankBody(ctx, target), row.name),
        id: typeof j.id === 'string' ? j.id : null,
        results: rankedIndexes(j[row.resultsField]),
        totalTokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : null,
      });
    },
  };
  return {
    name: row.name,
    baseURL: row.baseURL,
    authHeaders(target: Target): Record<string, string> {
      return typeof target.api_key === 'string' && target.api_key !== '' ? { authorization: `Bearer ${target.api_key}` } : {};
    },
    routes: { rerank: route },
  };
}
