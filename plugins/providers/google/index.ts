import * as v from 'valibot';
import { addShapedRoutes, effectiveBody, type GatewayPlugin, parseOptions, type Provider, type RequestContext, type Target } from '../../../sdk/index.js';
import { batchEmbedAnswer, geminiChatAnswer, imagenImagesRoute, isStrict, type Json, modelName, toBatchEmbedRequest, toGeminiRequest } from '../../../sdk/gemini/index.js';

export const PLUGIN_NAME = 'google';
export const GOOGLE_BASE_URL = 'https://generativelanguage.googleapis.com';

export const GoogleOptionsSchema = v.strictObject({
  /** Replaces https://generativelanguage.googleapis.com for every request (a target's `custom_host` still wins). */
  baseURL: v.optional(v.pipe(v.string(), v.url())),
  /** Used when the request's target carries no `api_key`. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
});

export type GoogleOptions = v.InferInput<typeof GoogleOptionsSchema>;

export { toGeminiRequest, fromGeminiResponse, geminiFinish, geminiUsage } from '../../../sdk/gemini/index.js';
export { geminiStreamTranslator } from '../../../sdk/gemini/index.js';
export { geminiChatAnswer, geminiErrorAnswer } from '../../../sdk/gemini/index.js';

const body = (ctx: RequestContext, target: Target): Json => effectiveBody(ctx, target) ?? {};

/**
 * The `google` provider: the Gemini API (Google AI Studio).
 * - chat completions → `POST {base}/v1beta/models/{model}:generateContent`, or
 *   `:streamGenerateContent?alt=sse` when `stream` is true; translated both ways.
 * - embeddings → `POST {base}/v1beta/models/{model}:batchEmbedContents`.
 * The key goes in `x-goog-api-key` (never in the URL). `custom_host` replaces
 * the scheme and host (`https://generativelanguage.googleapis.com`).
 */
export function google(options: GoogleOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, GoogleOptionsSchema, options);
  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: (opts.baseURL ?? GOOGLE_BASE_URL).replace(/\/$/, ''),
    authHeaders(target: Target): Record<string, string> {
      const key = typeof target.api_key === 'string' && target.api_key !== '' ? target.api_key : opts.apiKey;
      return key === undefined ? {} : { 'x-goog-api-key': key };
    },
    routes: {
      'chat.completions': {
        path: (ctx, target) => {
          const b = body(ctx, target);
          const verb = b.stream === true ? 'streamGenerateContent?alt=sse' : 'generateContent';
          return `/v1beta/models/${modelName(b, PLUGIN_NAME)}:${verb}`;
        },
        body: (ctx, target) => {
          const b = body(ctx, target);
          return JSON.stringify(toGeminiRequest(b, { provider: PLUGIN_NAME, stream: b.stream === true, strict: isStrict(target) }));
        },
        response: async (upstream, ctx, target) => {
          const b = body(ctx, target);
          return geminiChatAnswer(upstream, ctx, {
            provider: PLUGIN_NAME,
            model: String(b.model),
            stream: b.stream === true,
            strict: isStrict(target),
            includeUsage: (b.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true,
          });
        },
      },
      embeddings: {
        path: (ctx, target) => `/v1beta/models/${modelName(body(ctx, target), PLUGIN_NAME)}:batchEmbedContents`,
        body: (ctx, target) => {
          const b = body(ctx, target);
          return JSON.stringify(toBatchEmbedRequest(b, modelName(b, PLUGIN_NAME), PLUGIN_NAME));
        },
        response: async (upstream, ctx, target) => {
          const b = body(ctx, target);
          return batchEmbedAnswer(upstream, ctx, { provider: PLUGIN_NAME, model: String(b.model), base64: b.encoding_format === 'base64' });
        },
      },
      // Imagen at `:predict` (sdk/gemini/images.ts), for the media plugin's `POST /v1/images/generations`.
      'images.generations': imagenImagesRoute(PLUGIN_NAME, (model) => `/v1beta/models/${model}:predict`),
    },
  };
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default google;
