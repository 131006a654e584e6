import * as v from 'valibot';
import {
  abortable,
  addShapedRoutes,
  effectiveBody,
  fieldSchema as f,
  type GatewayPlugin,
  parseOptions,
  passThrough,
  type Provider,
  type RequestContext,
  type Target,
  type TargetField,
  anthropic as anthropicSdk,
} from '../../../sdk/index.js';
import { geminiChatAnswer, imagenImagesRoute, isObject, isStrict, type Json, modelName, toGeminiRequest } from '../../../sdk/gemini/index.js';
import { toVertexAnthropicRequest, VERTEX_ANTHROPIC_VERSION, vertexAnthropicAnswer, vertexMessagesAnswer } from './anthropic.js';
import { TokenCache, tokenSender } from './auth.js';
import { predictAnswer, toPredictRequest } from './embeddings.js';
import { modelPath, vertexOrigin } from './url.js';

export const PLUGIN_NAME = 'vertex-ai';

/** The target fields Vertex AI reads (the spec's `cloudB_` stand-ins): where the model runs and the service account to call it as. */
export const VERTEX_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  vertex_project_id: {
    schema: f.string(),
    placement: true,
    inherit: 'same-provider',
    aliases: ['cloudB_project_id'],
    combination: ['provider', 'vertex_region', 'vertex_project_id'],
  },
  vertex_region: { schema: f.string(), placement: true, inherit: 'same-provider', aliases: ['cloudB_region'] },
  vertex_service_account_json: {
    schema: f.object(),
    credential: true,
    inherit: 'same-provider',
    aliases: ['cloudB_service_account_json'],
    combination: ['provider', 'vertex_region', 'vertex_service_account_json'],
  },
});

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

/** The client's `anthropic-beta`, passed on to Claude on Vertex. */
const betaHeader = (ctx: RequestContext): Record<string, string> => {
  const beta = anthropicSdk.platformBetas(ctx.header('anthropic-beta'));
  return beta === undefined ? {} : { 'anthropic-beta': beta };
};


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
 * - embeddings → `…/publishers/google/models/{model}:predict`;
 * - the Messages API (the `messages` front door), native for Claude models at
 *   `:rawPredict` / `:streamRawPredict` (and `count-tokens:rawPredict`).
 *
 * Service-account tokens are fetched in `prepare` (once per attempt, from a
 * cache) through the gateway's pooled client.
 */
export function vertexAI(options: VertexOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, VertexOptionsSchema, options);
  /** Service-account tokens; the cache needs the pooled client, which `apply` hands over. */
  let tokens: TokenCache | null = null;
  const provider: Provider = {
    name: PLUGIN_NAME,
    // The region's host, or `custom_host` (the `/v1/projects/…` path is kept either way).
    baseURL: vertexOrigin,
    authHeaders(target: Target): Record<string, string> {
      const token = typeof target.api_key === 'string' && target.api_key !== '' ? target.api_key : undefined;
      return token === undefined ? {} : { authorization: `Bearer ${token}` };
    },
    // A service account (preferred over api_key when both are set) becomes a bearer token.
    async prepare(request, target, ctx) {
      const sa = target.vertex_service_account_json;
      if (!isObject(sa)) return;
      request.headers.authorization = `Bearer ${await abortable(tokens!.token(sa), ctx.attemptSignal ?? ctx.signal)}`;
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
      // The Messages API, native for Claude models (vertex.md §7): the body without `model` (it is in the URL) plus
      // `anthropic_version`; other models take the door's translation to chat (Gemini).
      messages: {
        accepts: (ctx, target) => isAnthropicModel(String(body(ctx, target).model ?? '')),
        path: (ctx, target) => {
          const b = body(ctx, target);
          return modelPath(target, 'anthropic', modelName(b, PLUGIN_NAME), b.stream === true ? 'streamRawPredict' : 'rawPredict');
        },
        headers: betaHeader,
        body: (ctx, target) => {
          const { model: _model, ...rest } = body(ctx, target);
          return JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest });
        },
        response: vertexMessagesAnswer,
      },
      'messages.count_tokens': {
        accepts: (ctx, target) => isAnthropicModel(String(body(ctx, target).model ?? '')),
        path: (_ctx, target) => modelPath(target, 'anthropic', 'count-tokens', 'rawPredict'),
        headers: betaHeader,
        body: (ctx, target) => JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body(ctx, target) }),
        response: (upstream) => passThrough(upstream),
      },
      embeddings: {
        path: (ctx, target) => modelPath(target, 'google', modelName(body(ctx, target), PLUGIN_NAME), 'predict'),
        body: (ctx, target) => JSON.stringify(toPredictRequest(body(ctx, target), PLUGIN_NAME)),
        response: async (upstream, ctx, target) => {
          const b = body(ctx, target);
          return predictAnswer(upstream, ctx, { provider: PLUGIN_NAME, model: String(b.model), base64: b.encoding_format === 'base64' });
        },
      },
      // Imagen at the publisher model's `:predict` (sdk/gemini/images.ts), for the media plugin's `POST /v1/images/generations`.
      'images.generations': imagenImagesRoute(PLUGIN_NAME, (model, target) => modelPath(target, 'google', model, 'predict')),
    },
  };
  return {
    name: PLUGIN_NAME,
    targetFields: VERTEX_FIELDS,
    state: [
      { name: 'access-tokens', scope: 'credential', keyedBy: "Google access tokens, by the service account's email, key id and the digest of its private key." },
    ],
    apply(api) {
      tokens = new TokenCache(tokenSender(api.upstream));
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default vertexAI;
