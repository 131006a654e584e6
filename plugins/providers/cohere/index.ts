import * as v from 'valibot';
import {
  addRerankRoute,
  addShapedRoutes,
  documentTexts,
  effectiveBody,
  extraParameters,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  jsonAnswer,
  parseOptions,
  type Provider,
  rankedIndexes,
  readErrorJson,
  readJson,
  type RequestContext,
  rerankAnswer,
  rerankBody,
  streamAnswer,
  type Target,
  toGatewayUsage,
  upstreamModel,
  type UpstreamResponse,
  wantsUsage,
} from '../../../sdk/index.js';
import { cohereErrorAnswer, fromCohereChat, isObject, toCohereChat } from './chat.js';
import { fromCohereEmbed, toCohereEmbed } from './embed.js';
import { cohereStreamTranslator } from './stream.js';

export const PLUGIN_NAME = 'cohere';
export const COHERE_BASE_URL = 'https://api.cohere.com';

export { toCohereChat, fromCohereChat, cohereFinish, cohereUsage } from './chat.js';
export { cohereStreamTranslator } from './stream.js';
export { toCohereEmbed, fromCohereEmbed } from './embed.js';

const OptionsSchema = v.strictObject({
  /** Replaces https://api.cohere.com for every request (no `/v2`: the routes add it). */
  baseURL: v.optional(v.pipe(v.string(), v.url())),
  /** Sent as the Bearer key when the request's target carries none. */
  apiKey: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Also serve `POST /v1/rerank` (default true). */
  rerank: v.optional(v.boolean(), true),
});
export type CohereOptions = v.InferInput<typeof OptionsSchema>;

const body = (ctx: RequestContext, target: Target) => {
  const b = effectiveBody(ctx, target);
  if (b === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return b;
};
const ok = (upstream: UpstreamResponse) => upstream.status >= 200 && upstream.status < 300;

/**
 * The `cohere` provider: chat (Chat v2, JSON and SSE, translated both ways),
 * embeddings (Embed v2) and rerank (Rerank v2), plus credentials for the
 * generic proxy. A rerank model may be sent as `cohere/<model>`.
 */
export function cohere(options: CohereOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);

  async function chatResponse(upstream: UpstreamResponse, ctx: RequestContext, target: Target): Promise<GatewayResponse> {
    if (!ok(upstream)) return cohereErrorAnswer(upstream, await readErrorJson(upstream));
    const b = body(ctx, target);
    const model = String(b.model ?? '');
    if (b.stream === true) {
      return streamAnswer(upstream, cohereStreamTranslator({ model, includeUsage: wantsUsage(ctx), onUsage: (u) => (ctx.usage = toGatewayUsage(u)) }));
    }
    const { completion, usage } = fromCohereChat(await readJson(upstream), model);
    ctx.usage = toGatewayUsage(usage);
    return jsonAnswer(upstream, upstream.status, completion);
  }

  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: (opts.baseURL ?? COHERE_BASE_URL).replace(/\/$/, ''),
    authHeaders(target: Target): Record<string, string> {
      const key = typeof target.api_key === 'string' && target.api_key !== '' ? target.api_key : opts.apiKey;
      return key === undefined ? {} : { authorization: `Bearer ${key}` };
    },
    routes: {
      'chat.completions': {
        path: '/v2/chat',
        headers: (ctx, target) => (body(ctx, target).stream === true ? { accept: 'text/event-stream' } : { accept: 'application/json' }),
        body: (ctx, target) => {
          const b = body(ctx, target);
          return JSON.stringify(toCohereChat(b, PLUGIN_NAME, b.stream === true));
        },
        response: chatResponse,
      },
      embeddings: {
        path: '/v2/embed',
        body: (ctx, target) => {
          const b = body(ctx, target);
          return JSON.stringify(toCohereEmbed(b, String(b.model ?? ''), PLUGIN_NAME));
        },
        response: async (upstream, ctx, target) => {
          if (!ok(upstream)) return cohereErrorAnswer(upstream, await readErrorJson(upstream));
          const b = body(ctx, target);
          const { answer, tokens } = fromCohereEmbed(await readJson(upstream), String(b.model ?? ''), b.encoding_format === 'base64');
          ctx.usage = { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens };
          return jsonAnswer(upstream, upstream.status, answer);
        },
      },
      rerank: {
        path: '/v2/rerank',
        body: (ctx, target) => {
          const b = rerankBody(ctx, target);
          const out: Record<string, unknown> = { model: upstreamModel(b, PLUGIN_NAME), query: b.query, documents: documentTexts(b) };
          if (typeof b.top_n === 'number') out.top_n = b.top_n;
          if (typeof b.max_tokens_per_doc === 'number') out.max_tokens_per_doc = b.max_tokens_per_doc;
          if (typeof b.priority === 'number') out.priority = b.priority;
          return JSON.stringify({ ...out, ...extraParameters(b) });
        },
        response: async (upstream, ctx, target) => {
          if (!ok(upstream)) return cohereErrorAnswer(upstream, await readErrorJson(upstream));
          const json = await readJson(upstream);
          const j = isObject(json) ? json : {};
          const meta = isObject(j.meta) ? j.meta : {};
          const billed = isObject(meta.billed_units) ? meta.billed_units : {};
          return rerankAnswer(upstream, ctx, target, {
            provider: PLUGIN_NAME,
            model: upstreamModel(rerankBody(ctx, target), PLUGIN_NAME),
            id: typeof j.id === 'string' ? j.id : null,
            results: rankedIndexes(j.results),
            searchUnits: typeof billed.search_units === 'number' ? billed.search_units : null,
          });
        },
      },
    },
  };

  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      if (opts.rerank) addRerankRoute(api);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default cohere;
