import { randomBytes } from 'node:crypto';
import { effectiveBody, GatewayError, type GatewayResponse, type RequestContext, type Target, type UpstreamResponse } from '../../core/index.js';
import { errorAnswer, jsonAnswer, readText } from '../openai/translate.js';
import { isObject } from '../json-object.js';

/**
 * Helpers shared by every rerank adapter (cohere, jina, voyage, bedrock, …):
 * reading the gateway's rerank body, and building the spec's Rerank response
 * (`object: "list"`, results sorted by `relevance_score` descending, `model`,
 * `id`, `usage.search_units`, `provider`).
 */

type Json = Record<string, unknown>;

/** The rerank body as this target sees it (validated by the rerank plugin before any provider runs). */
export function rerankBody(ctx: RequestContext, target: Target): Json {
  const body = effectiveBody(ctx, target);
  if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return body;
}

/** The text of each document: strings as they are, objects by their `text` field. */
export function documentTexts(body: Json): string[] {
  const docs = Array.isArray(body.documents) ? body.documents : [];
  return docs.map((d: unknown, i: number) => {
    if (typeof d === 'string') return d;
    if (isObject(d) && typeof d.text === 'string') return d.text;
    throw new GatewayError('invalid_request', `'documents[${i}]' must be a string or an object with a text field.`, { param: `documents[${i}]` });
  });
}

/**
 * The model to send upstream: a leading `<provider>/` (e.g. `cohere/rerank-v3.5`)
 * is removed, as the spec allows; anything else is kept as is.
 */
export function upstreamModel(body: Json, provider: string): string {
  const model = typeof body.model === 'string' ? body.model : '';
  return model.startsWith(`${provider}/`) ? model.slice(provider.length + 1) : model;
}

/** The additional provider-specific parameters of the request (`parameters`), or an empty object. */
export function extraParameters(body: Json): Json {
  return isObject(body.parameters) ? body.parameters : {};
}

/** One upstream result, before sorting and document re-attachment. */
export interface RankedIndex {
  /** The document's position in the request's `documents`. */
  index: number;
  /** How relevant the document is to the query, as the provider scores it (higher is more relevant). */
  relevance_score: number;
}

/** Reads `[{index, relevance_score}]` from a results array. */
export function rankedIndexes(list: unknown): RankedIndex[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((r: unknown) =>
    isObject(r) && typeof r.index === 'number' && typeof r.relevance_score === 'number' ? [{ index: r.index, relevance_score: r.relevance_score }] : [],
  );
}

/** What {@link rerankAnswer} needs to build the gateway's rerank answer. */
export interface RerankAnswerOptions {
  /** The provider's name, as the answer reports it. */
  provider: string;
  /** The upstream's model name when it reports one; else the model sent upstream. */
  model: string;
  /** The upstream's request id when it has one; else one is generated. */
  id?: string | null;
  /** The provider's results, in any order (the answer sorts them by score). */
  results: RankedIndex[];
  /** The provider's billed search units; providers that bill tokens report 1 per request. */
  searchUnits?: number | null;
  /** Tokens the provider reports, for the log only (the answer carries search units). */
  totalTokens?: number | null;
}

/** Builds the spec's Rerank response from upstream results and the request's documents. */
export function rerankResponse(ctx: RequestContext, target: Target, opts: RerankAnswerOptions): Json {
  const body = rerankBody(ctx, target);
  const texts = documentTexts(body);
  const withDocs = body.return_documents === true;
  const results = opts.results
    .filter((r) => Number.isInteger(r.index) && r.index >= 0 && r.index < texts.length && typeof r.relevance_score === 'number')
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .map((r): Json => (withDocs ? { index: r.index, relevance_score: r.relevance_score, document: { text: texts[r.index]! } } : { index: r.index, relevance_score: r.relevance_score }));
  if (typeof opts.totalTokens === 'number') ctx.usage = { prompt_tokens: opts.totalTokens, completion_tokens: 0, total_tokens: opts.totalTokens };
  return {
    object: 'list',
    results,
    model: opts.model,
    id: typeof opts.id === 'string' && opts.id !== '' ? opts.id : `rerank-${randomBytes(12).toString('base64url')}`,
    usage: { search_units: typeof opts.searchUnits === 'number' ? opts.searchUnits : 1 },
    provider: opts.provider,
  };
}

/** A successful rerank answer. */
export function rerankAnswer(upstream: UpstreamResponse, ctx: RequestContext, target: Target, opts: RerankAnswerOptions): GatewayResponse {
  return jsonAnswer(upstream, 200, rerankResponse(ctx, target, opts));
}

const MAX_ERROR_BYTES = 1024 * 1024;

/** Reads an error body as JSON (null when it is not JSON or too large). */
export async function readErrorJson(upstream: UpstreamResponse): Promise<unknown> {
  try {
    return JSON.parse(await readText(upstream.body, MAX_ERROR_BYTES));
  } catch {
    return null;
  }
}

/**
 * The message of an error body in any of the common shapes: `{error:{message}}`,
 * `{message}` / `{Message}`, FastAPI's `{detail: "…"}` or `{detail: [{msg}]}`.
 */
export function errorMessage(json: unknown, fallback: string): string {
  if (!isObject(json)) return fallback;
  if (isObject(json.error) && typeof json.error.message === 'string') return json.error.message;
  if (typeof json.error === 'string') return json.error;
  if (typeof json.message === 'string') return json.message;
  if (typeof json.Message === 'string') return json.Message;
  if (typeof json.detail === 'string') return json.detail;
  if (Array.isArray(json.detail)) {
    const msgs = json.detail.map((d: unknown) => (isObject(d) && typeof d.msg === 'string' ? d.msg : '')).filter((m) => m !== '');
    if (msgs.length > 0) return msgs.join('; ');
  }
  return fallback;
}

/** A generic upstream error for a Bearer-key rerank provider, in the gateway envelope with the upstream status kept. */
export async function genericErrorAnswer(upstream: UpstreamResponse, provider: string): Promise<GatewayResponse> {
  const json = await readErrorJson(upstream);
  return errorAnswer(upstream, { message: errorMessage(json, `The provider ${provider} answered ${upstream.status}.`), type: `${provider}_error`, code: String(upstream.status) });
}
