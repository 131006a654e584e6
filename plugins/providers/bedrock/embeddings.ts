import { base64Floats, GatewayError, type UpstreamResponse } from '../../../sdk/index.js';
import { isObject } from './converse.js';

type Json = Record<string, unknown>;

/** Which InvokeModel body an embedding model takes; cross-region prefixes (`us.`, `eu.`, …) allowed. */
export function embeddingFamily(model: string): 'titan' | 'cohere' | null {
  if (/(^|\.)amazon\.titan-embed-/.test(model)) return 'titan';
  if (/(^|\.)cohere\.embed-/.test(model)) return 'cohere';
  return null;
}

function inputTexts(body: Json, provider: string): string[] {
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.length > 0 && input.every((s) => typeof s === 'string') ? (input as string[]) : null;
  if (texts === null) throw new GatewayError('invalid_request', `Provider "${provider}": 'input' must be a string or a non-empty array of strings (token arrays are not supported).`, { param: 'input' });
  return texts;
}

/**
 * OpenAI embeddings → an InvokeModel body:
 * - Titan (`amazon.titan-embed-*`): `{inputText, dimensions?, normalize?}`, one text per call
 *   (several inputs are a 400 naming `input`);
 * - Cohere (`cohere.embed-*`): `{texts, input_type (default search_document), truncate?}`.
 * Other models are a 400 naming `model`.
 */
export function toInvokeEmbedding(body: Json, model: string, provider: string): Json {
  const family = embeddingFamily(model);
  if (family === null) throw new GatewayError('invalid_request', `Provider "${provider}" serves embeddings for amazon.titan-embed-* and cohere.embed-* models only (got "${model}").`, { param: 'model' });
  const texts = inputTexts(body, provider);
  if (family === 'titan') {
    if (texts.length !== 1) throw new GatewayError('invalid_request', `Titan embedding models take one input per request (got ${texts.length}).`, { param: 'input' });
    const out: Json = { inputText: texts[0] };
    if (typeof body.dimensions === 'number') out.dimensions = body.dimensions;
    if (typeof body.normalize === 'boolean') out.normalize = body.normalize;
    return out;
  }
  const out: Json = { texts, input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document' };
  if (typeof body.truncate === 'string') out.truncate = body.truncate;
  return out;
}

/** An InvokeModel embedding answer → OpenAI list; tokens from the body (Titan) or `x-amzn-bedrock-input-token-count`. */
export function fromInvokeEmbedding(upstream: UpstreamResponse, json: unknown, model: string, base64: boolean): { answer: Json; tokens: number } {
  const j = isObject(json) ? json : {};
  let vectors: number[][] = [];
  if (Array.isArray(j.embedding)) vectors = [j.embedding as number[]];
  else if (Array.isArray(j.embeddings)) vectors = j.embeddings as number[][];
  else if (isObject(j.embeddings) && Array.isArray(j.embeddings.float)) vectors = j.embeddings.float as number[][];
  const header = Number(upstream.headers['x-amzn-bedrock-input-token-count']);
  const tokens = typeof j.inputTextTokenCount === 'number' ? j.inputTextTokenCount : Number.isFinite(header) ? header : 0;
  return {
    answer: {
      object: 'list',
      data: vectors.map((values, index) => ({ object: 'embedding', index, embedding: base64 ? base64Floats(values) : values })),
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    },
    tokens,
  };
}
