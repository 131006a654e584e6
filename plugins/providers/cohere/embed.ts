import { base64Floats, GatewayError } from '../../../sdk/index.js';
import { isObject } from './chat.js';

type Json = Record<string, unknown>;

/**
 * OpenAI embeddings → Cohere Embed v2 (`POST /v2/embed`, cohere.md §5):
 * `input` (a string or strings) → `texts`; `input_type` (Cohere's, required by
 * v3+ models) from the body's `input_type` extension, default
 * `search_document`; `dimensions` → `output_dimension`; floats are always
 * requested and base64-encoded by the gateway when the client asks for base64.
 */
export function toCohereEmbed(body: Json, model: string, provider: string): Json {
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.length > 0 && input.every((s) => typeof s === 'string') ? (input as string[]) : null;
  if (texts === null) throw new GatewayError('invalid_request', `Provider "${provider}": 'input' must be a string or a non-empty array of strings (token arrays are not supported).`, { param: 'input' });
  const out: Json = { model, texts, input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document', embedding_types: ['float'] };
  if (typeof body.dimensions === 'number') out.output_dimension = body.dimensions;
  if (typeof body.truncate === 'string') out.truncate = body.truncate;
  return out;
}

/** Cohere's embeddings (`embeddings.float`, or a bare array from older models) → OpenAI list with usage from billed input tokens. */
export function fromCohereEmbed(json: unknown, model: string, base64: boolean): { answer: Json; tokens: number } {
  const j = isObject(json) ? json : {};
  const embeddings = isObject(j.embeddings) ? j.embeddings.float : j.embeddings;
  const list = Array.isArray(embeddings) ? (embeddings as number[][]) : [];
  const meta = isObject(j.meta) ? j.meta : {};
  const billed = isObject(meta.billed_units) ? meta.billed_units : {};
  const tokens = typeof billed.input_tokens === 'number' ? billed.input_tokens : 0;
  return {
    answer: {
      object: 'list',
      data: list.map((values, index) => ({ object: 'embedding', index, embedding: base64 ? base64Floats(values) : values })),
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    },
    tokens,
  };
}
