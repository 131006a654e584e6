import { effectiveBody, GatewayError, type GatewayResponse, type ProviderRoute, type RequestContext, type Target, type UpstreamResponse } from '../../core/index.js';
import { errorAnswer, jsonAnswer, readJson, readText } from '../openai/translate.js';
import { geminiErrorAnswer, parseErrorBody } from './answer.js';
import { parseImageSize } from '../media.js';
import { invalid, isObject, type Json, modelName } from './parts.js';

/**
 * OpenAI's image generation (`images.generations`, docs/media.md) on Imagen, for the Gemini API
 * (`POST {base}/v1beta/models/{model}:predict`) and Vertex AI (the Google publisher model's `:predict`), with `{instances: [{prompt}], parameters: {sampleCount, aspectRatio?}}`,
 * answered `{predictions: [{bytesBase64Encoded, mimeType}]}`, which becomes `{created, data: [{b64_json}]}`.
 *
 * - `model` defaults to {@link IMAGEN_DEFAULT_MODEL}; `n` → `sampleCount` (1 when absent: Imagen's own default is 4);
 * - `size` (`WxH`) → the nearest of Imagen's aspect ratios; `auto` or none sends none (Imagen's default, 1:1);
 * - `response_format` other than `b64_json` is a 400 naming it: Imagen returns bytes, never a URL;
 * - `quality`, `style` and the other OpenAI fields have no Imagen counterpart and are not sent;
 * - an answer without a single image (Imagen drops the images its safety filters catch) is a 400
 *   `content_policy_violation`, as OpenAI answers a refused prompt;
 * - an error is Google's envelope mapped to the gateway's, with the upstream status.
 */

/** The model used when the body names none. */
export const IMAGEN_DEFAULT_MODEL = 'imagen-4.0-generate-001';

/** Imagen's aspect ratios, width over height. */
export const IMAGEN_ASPECT_RATIOS: Readonly<Record<string, number>> = Object.freeze({ '1:1': 1, '16:9': 16 / 9, '9:16': 9 / 16, '4:3': 4 / 3, '3:4': 3 / 4 });

/** The Imagen aspect ratio nearest to `size` (compared on a log scale, so 2:1 and 1:2 are as far from 1:1); undefined for none or `auto`. */
export function imagenAspectRatio(size: unknown, provider: string): string | undefined {
  const parsed = parseImageSize(size, provider);
  if (parsed === null) return undefined;
  const ratio = Math.log(parsed.width / parsed.height);
  let best = '1:1';
  let distance = Infinity;
  for (const [name, value] of Object.entries(IMAGEN_ASPECT_RATIOS)) {
    const d = Math.abs(Math.log(value) - ratio);
    if (d < distance) [best, distance] = [name, d];
  }
  return best;
}

/** Refuses a `response_format` other than `b64_json` (a URL cannot be given: the provider answers bytes). */
export function checkResponseFormat(body: Json, provider: string): void {
  const format = body.response_format;
  if (format === undefined || format === null || format === 'b64_json') return;
  throw invalid(provider, 'response_format', `response_format ${JSON.stringify(format)} is not supported: images come back as b64_json only`);
}

/** The body's model, else {@link IMAGEN_DEFAULT_MODEL}, checked for a URL path segment. */
export function imagenModel(body: Json, provider: string): string {
  return modelName({ model: body.model ?? IMAGEN_DEFAULT_MODEL }, provider);
}

/** OpenAI's image generation body → Imagen's `:predict` body. */
export function toImagenRequest(body: Json, provider: string): Json {
  checkResponseFormat(body, provider);
  if (typeof body.prompt !== 'string' || body.prompt === '') throw invalid(provider, 'prompt', 'prompt is required');
  const parameters: Json = { sampleCount: typeof body.n === 'number' ? body.n : 1 };
  const aspectRatio = imagenAspectRatio(body.size, provider);
  if (aspectRatio !== undefined) parameters.aspectRatio = aspectRatio;
  return { instances: [{ prompt: body.prompt }], parameters };
}

/** `{predictions: [{bytesBase64Encoded, mimeType, prompt?}]}` → OpenAI's image list (an enhanced prompt as `revised_prompt`), and the filter reason of any image dropped. */
export function fromImagenResponse(json: unknown): { data: Json[]; filtered: string | null } {
  const predictions = isObject(json) && Array.isArray(json.predictions) ? json.predictions : [];
  const data: Json[] = [];
  let filtered: string | null = null;
  for (const p of predictions) {
    if (!isObject(p)) continue;
    if (typeof p.bytesBase64Encoded === 'string' && p.bytesBase64Encoded !== '') {
      data.push(typeof p.prompt === 'string' && p.prompt !== '' ? { b64_json: p.bytesBase64Encoded, revised_prompt: p.prompt } : { b64_json: p.bytesBase64Encoded });
    } else if (typeof p.raiFilteredReason === 'string' && p.raiFilteredReason !== '') filtered ??= p.raiFilteredReason;
  }
  return { data, filtered };
}

/** The answer to an Imagen `:predict` call in OpenAI's shape (no usage: Imagen reports none). */
export async function imagenAnswer(upstream: UpstreamResponse, provider: string): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) return geminiErrorAnswer(upstream, parseErrorBody(await readText(upstream.body)), provider);
  const { data, filtered } = fromImagenResponse(await readJson(upstream));
  if (data.length === 0) {
    const message = `The provider ${provider} generated no image: ${filtered ?? 'its safety filters blocked the prompt or every image'}.`;
    return errorAnswer(upstream, { message, type: 'invalid_request_error', code: 'content_policy_violation' }, 400);
  }
  return jsonAnswer(upstream, upstream.status, { created: Math.floor(Date.now() / 1000), data });
}

const bodyOf = (ctx: RequestContext, target: Target): Json => {
  const body = effectiveBody(ctx, target);
  if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return body;
};

/**
 * The `images.generations` adapter of a provider that serves Imagen (the Gemini API, Vertex AI): the body's model
 * (else {@link IMAGEN_DEFAULT_MODEL}) at `path(model, target)`, the mapping above both ways.
 */
export function imagenImagesRoute(provider: string, path: (model: string, target: Target) => string): ProviderRoute {
  return {
    path: (ctx, target) => path(imagenModel(bodyOf(ctx, target), provider), target),
    body: (ctx, target) => JSON.stringify(toImagenRequest(bodyOf(ctx, target), provider)),
    response: (upstream) => imagenAnswer(upstream, provider),
  };
}
