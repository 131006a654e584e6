import type { GatewayResponse, RequestContext, UpstreamResponse } from '../../core/index.js';
import { base64Floats } from '../openai/embeddings.js';
import { jsonAnswer, readJson, readText } from '../openai/translate.js';
import { geminiErrorAnswer, parseErrorBody } from './answer.js';
import { invalid, isObject, type Json } from './parts.js';

/**
 * Embeddings on the Gemini API (`:batchEmbedContents`, shared/providers/vertex.md §8):
 * each input string becomes one request `{model: "models/<m>", content: {parts: [{text}]}}`;
 * `dimensions` → `outputDimensionality`. Token-array inputs cannot be sent (400).
 */
export function toBatchEmbedRequest(body: Json, model: string, provider: string): Json {
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((s) => typeof s === 'string') ? (input as string[]) : null;
  if (texts === null || texts.length === 0) throw invalid(provider, 'input', 'input must be a string or a non-empty array of strings (token arrays are not supported)');
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
  return {
    requests: texts.map((text) => {
      const request: Json = { model: `models/${model}`, content: { parts: [{ text }] } };
      if (dimensions !== undefined) request.outputDimensionality = dimensions;
      return request;
    }),
  };
}


/**
 * `{"embeddings":[{"values":[…]}]}` as an OpenAI embedding list. The Gemini
 * answer carries no token counts, so usage is reported as 0.
 */
export function fromBatchEmbedResponse(json: unknown, model: string, base64: boolean): Json {
  const list = isObject(json) && Array.isArray(json.embeddings) ? json.embeddings : [];
  return {
    object: 'list',
    data: list.map((e, index) => {
      const values = isObject(e) && Array.isArray(e.values) ? (e.values as number[]) : [];
      return { object: 'embedding', index, embedding: base64 ? base64Floats(values) : values };
    }),
    model,
    usage: { prompt_tokens: 0, total_tokens: 0 },
  };
}

/** The answer to `:batchEmbedContents`; usage stays unknown for the log (the answer has none). */
export async function batchEmbedAnswer(upstream: UpstreamResponse, _ctx: RequestContext, opts: { provider: string; model: string; base64: boolean }): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) return geminiErrorAnswer(upstream, parseErrorBody(await readText(upstream.body)), opts.provider);
  const json = await readJson(upstream);
  return jsonAnswer(upstream, upstream.status, fromBatchEmbedResponse(json, opts.model, opts.base64));
}
