import * as v from 'valibot';
import { abortable, effectiveBody, parseOptions, STAGE, type GatewayPlugin, type Provider, type RequestContext, type Target } from '../../../core/index.js';
import { addShapedRoutes } from '../openai-format/routes.js';
import { geminiChatAnswer } from '../google/answer.js';
import { isObject, isStrict, modelName, type Json } from '../google/parts.js';
import { toGeminiRequest } from '../google/translate.js';
import { toVertexAnthropicRequest, vertexAnthropicAnswer } from './anthropic.js';
import { TokenCache, tokenSender } from './auth.js';
import { predictAnswer, toPredictRequest } from './embeddings.js';
import { modelPath, vertexOrigin } from './url.js';

export const PLUGIN_NAME = 'vertex-ai';
/** Where the interceptor that prepares a Vertex target (origin, token) sits: inside retry, breaker and timeout. */
export const VERTEX_STAGE = STAGE.LATE;

export const VertexOptionsSchema = v.strictObject({
  /** Claude models: `max_tokens` sent when the client gives neither `max_completion_tokens` nor `max_tokens` (Anthropic requires it). */
  defaultMaxTokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 4096),
});
export type VertexOptions = v.InferInput<typeof VertexOptionsSchema>;

export { TokenCache, parseServiceAccount, signAssertion } from './auth.js';
export { regionOrigin, vertexOrigin, modelPath } from './url.js';
export { toVertexAnthropicRequest, VERTEX_ANTHROPIC_VERSION } from './anthropic.js';

/** Anthropic models on Vertex: a model name starting with `claude` (any case) goes to the `anthropic` publisher. */
export function isAnthropicModel(model: string): boolean {
  return model.toLowerCase().startsWith('claude');
}

const body = (ctx: RequestContext, target: Target): Json => effectiveBody(ctx, target) ?? {};


/**
 * The `vertex-ai` provider: Gemini (and Claude, see below) on Google Cloud Vertex AI.
 *
 * Target fields: `vertex_project_id` (else the service account's `project_id`),
 * `vertex_region` (required; `global` → host aiplatform.googleapis.com, `us`/`eu`
 * → the multi-region hosts, else `{region}-aiplatform.googleapis.com`), and a
 * credential: `vertex_service_account_json` (a key file object; preferred when
 * both are set) or `api_key`, sent as a ready OAuth bearer token. `custom_host`
 * replaces the scheme and host (`https://{region}-aiplatform.googleapis.com`),
 * the `/v1/projects/…` path is kept.
 *
 * - chat completions → `…/publishers/google/models/{model}:generateContent`
 *   (`:streamGenerateContent?alt=sse` for streams), translated both ways;
 * - models whose name starts with `claude` → `…/publishers/anthropic/models/{model}:rawPredict`
 *   (`:streamRawPredict`), in Anthropic's Messages format;
 * - embeddings → `…/publishers/google/models/{model}:predict`.
 *
 * Service-account tokens are fetched by an interceptor (the request builders
 * are synchronous) through the gateway's pooled client and cached.
 */
export function vertexAI(options: VertexOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, VertexOptionsSchema, options);
  /** Bearer tokens of the prepared target copies the interceptor hands to the transport. */
  const bearer = new WeakMap<Target, string>();
  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: 'https://aiplatform.googleapis.com',
    authHeaders(target: Target): Record<string, string> {
      const token = bearer.get(target) ?? (typeof target.api_key === 'string' && target.api_key !== '' ? target.api_key : undefined);
      return token === undefined ? {} : { authorization: `Bearer ${token}` };
    },
    routes: {
      'chat.completions': {
        path: (ctx, target) => {
          const b = body(ctx, target);
          const model = modelName(b, PLUGIN_NAME);
          const stream = b.stream === true;
          if (isAnthropicModel(model)) return modelPath(target, 'anthropic', model, stream ? 'streamRawPredict' : 'rawPredict');
          return modelPath(target, 'google', model, stream ? 'streamGenerateContent?alt=sse' : 'generateContent');
        },
        body: (ctx, target) => {
          const b = body(ctx, target);
          const strict = isStrict(target);
          if (isAnthropicModel(modelName(b, PLUGIN_NAME))) {
            return JSON.stringify(toVertexAnthropicRequest(b, { provider: PLUGIN_NAME, defaultMaxTokens: opts.defaultMaxTokens, strict }));
          }
          return JSON.stringify(toGeminiRequest(b, { provider: PLUGIN_NAME, stream: b.stream === true, strict }));
        },
        response: async (upstream, ctx, target) => {
          const b = body(ctx, target);
          const answer = {
            provider: PLUGIN_NAME,
            model: String(b.model),
            stream: b.stream === true,
            strict: isStrict(target),
            includeUsage: (b.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true,
          };
          return isAnthropicModel(modelName(b, PLUGIN_NAME)) ? vertexAnthropicAnswer(upstream, ctx, answer) : geminiChatAnswer(upstream, ctx, answer);
        },
      },
      embeddings: {
        path: (ctx, target) => modelPath(target, 'google', modelName(body(ctx, target), PLUGIN_NAME), 'predict'),
        body: (ctx, target) => JSON.stringify(toPredictRequest(body(ctx, target), PLUGIN_NAME)),
        response: async (upstream, ctx, target) => {
          const b = body(ctx, target);
          return predictAnswer(upstream, ctx, { provider: PLUGIN_NAME, model: String(b.model), base64: b.encoding_format === 'base64' });
        },
      },
    },
  };
  return {
    name: PLUGIN_NAME,
    apply(api) {
      const tokens = new TokenCache(tokenSender(api.upstream));
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
      api.addInterceptor(
        PLUGIN_NAME,
        (next) => async (ctx, target) => {
          if (target.provider !== PLUGIN_NAME) return next(ctx, target);
          const prepared: Target = { ...target, custom_host: vertexOrigin(target) };
          const sa = target.vertex_service_account_json;
          if (isObject(sa)) bearer.set(prepared, await abortable(tokens.token(sa), ctx.attemptSignal ?? ctx.signal));
          return next(ctx, prepared);
        },
        VERTEX_STAGE,
      );
    },
  };
}

export default vertexAI;
