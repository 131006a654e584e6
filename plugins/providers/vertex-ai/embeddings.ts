import { base64Floats, type GatewayResponse, jsonAnswer, readJson, readText, type RequestContext, type UpstreamResponse } from '../../../sdk/index.js';
import { geminiErrorAnswer, invalid, isObject, type Json, parseErrorBody } from '../../../sdk/gemini/index.js';

/**
 * Embeddings on Vertex (`:predict` on a Google embedding model such as
 * `text-embedding-005`, shared/providers/vertex.md §1): each input string is
 * one instance `{content}`; `dimensions` → `parameters.outputDimensionality`.
 */
export function toPredictRequest(body: Json, provider: string): Json {
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((s) => typeof s === 'string') ? (input as string[]) : null;
  if (texts === null || texts.length === 0) throw invalid(provider, 'input', 'input must be a string or a non-empty array of strings (token arrays are not supported)');
  const out: Json = { instances: texts.map((content) => ({ content })) };
  if (typeof body.dimensions === 'number') out.parameters = { outputDimensionality: body.dimensions };
  return out;
}

/** `{"predictions":[{"embeddings":{"values":[…],"statistics":{"token_count":7}}}]}` as an OpenAI embedding list; token counts summed into usage. */
export function fromPredictResponse(json: unknown, model: string, base64: boolean): Json {
  const predictions = isObject(json) && Array.isArray(json.predictions) ? json.predictions : [];
  let tokens = 0;
  const data = predictions.map((p, index) => {
    const e = isObject(p) && isObject(p.embeddings) ? p.embeddings : {};
    const values = Array.isArray(e.values) ? (e.values as number[]) : [];
    const count = isObject(e.statistics) && typeof e.statistics.token_count === 'number' ? e.statistics.token_count : 0;
    tokens += count;
    return { object: 'embedding', index, embedding: base64 ? base64Floats(values) : values };
  });
  return { object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

export async function predictAnswer(upstream: UpstreamResponse, ctx: RequestContext, opts: { provider: string; model: string; base64: boolean }): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) return geminiErrorAnswer(upstream, parseErrorBody(await readText(upstream.body)), opts.provider);
  const answer = fromPredictResponse(await readJson(upstream), opts.model, opts.base64);
  const tokens = (answer.usage as { prompt_tokens: number }).prompt_tokens;
  ctx.usage = { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens };
  return jsonAnswer(upstream, upstream.status, answer);
}
