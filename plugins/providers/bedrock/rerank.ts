import type { RankedIndex, Target } from '../../../sdk/index.js';
import { isObject } from './converse.js';

type Json = Record<string, unknown>;

/** The model's ARN: the `model` itself when it is one (the spec passes full resource names), else the region's foundation-model ARN. */
export function rerankModelArn(model: string, region: string): string {
  return model.startsWith('arn:') ? model : `arn:aws:bedrock:${region}::foundation-model/${model}`;
}

/**
 * The gateway's rerank body → Bedrock Agent Runtime `POST /rerank`: one TEXT
 * query, INLINE TEXT sources, `numberOfResults` from `top_n`, and `parameters`
 * as the model's `additionalModelRequestFields`.
 */
export function toBedrockRerank(body: Json, documents: string[], modelArn: string): Json {
  const bedrockRerankingConfiguration: Json = { modelConfiguration: { modelArn, ...(isObject(body.parameters) ? { additionalModelRequestFields: body.parameters } : {}) } };
  if (typeof body.top_n === 'number') bedrockRerankingConfiguration.numberOfResults = body.top_n;
  return {
    queries: [{ type: 'TEXT', textQuery: { text: body.query } }],
    sources: documents.map((text) => ({ type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text } } })),
    rerankingConfiguration: { type: 'BEDROCK_RERANKING_MODEL', bedrockRerankingConfiguration },
  };
}

/** `{results: [{index, relevanceScore}]}` → ranked indexes. */
export function fromBedrockRerank(json: unknown): RankedIndex[] {
  const results = isObject(json) && Array.isArray(json.results) ? json.results : [];
  return results.flatMap((r: unknown) => (isObject(r) && typeof r.index === 'number' && typeof r.relevanceScore === 'number' ? [{ index: r.index, relevance_score: r.relevanceScore }] : []));
}

/** The region from the target, checked (it goes into a host name). */
export function regionOf(target: Target): string | null {
  const region = target.aws_region;
  return typeof region === 'string' && region !== '' ? region : null;
}
