import * as v from 'valibot';
import {
  baseURL,
  effectiveBody,
  GatewayError,
  parseOptions,
  STAGE,
  type GatewayPlugin,
  type GatewayResponse,
  type Provider,
  type RequestContext,
  type Target,
  type UpstreamResponse,
} from '../../../core/index.js';
import { addShapedRoutes } from '../openai-format/routes.js';
import { jsonAnswer, readJson, streamAnswer, toGatewayUsage, wantsUsage } from '../openai-format/translate.js';
import { addRerankRoute } from '../../rerank/index.js';
import { documentTexts, readErrorJson, rerankAnswer, rerankBody, upstreamModel } from '../../rerank/shape.js';
import { bedrockErrorAnswer, converseStreamTranslator, fromConverseResponse, idFrom } from './answer.js';
import { imageURLs, toConverseRequest } from './converse.js';
import { fromInvokeEmbedding, toInvokeEmbedding } from './embeddings.js';
import { fromBedrockRerank, regionOf, rerankModelArn, toBedrockRerank } from './rerank.js';
import { signRequest, type AwsCredentials } from './sign.js';

export const PLUGIN_NAME = 'bedrock';
/** Where the interceptor that signs Bedrock requests sits: inside retry, breaker and timeout, so every attempt is signed afresh. */
export const BEDROCK_STAGE = STAGE.LATE;

export { signRequest, type AwsCredentials, type SignInput } from './sign.js';
export { EventStreamDecoder, EventStreamError, encodeMessage } from './eventstream.js';
export { toConverseRequest } from './converse.js';
export { fromConverseResponse, converseStreamTranslator, bedrockErrorAnswer, bedrockFinish, bedrockUsage, EXCEPTION_STATUS } from './answer.js';
export { toInvokeEmbedding, embeddingFamily } from './embeddings.js';
export { toBedrockRerank, rerankModelArn } from './rerank.js';

/** Bytes of an image fetched for an http(s) image URL: Bedrock format (png|jpeg|gif|webp) and base64 data. */
export interface ResolvedImage {
  format: string;
  bytes: string;
}

const OptionsSchema = v.strictObject({
  /** `https://bedrock-runtime.{region}.amazonaws.com` host template override, e.g. for a VPC endpoint; `{region}` is replaced. */
  runtimeHost: v.optional(v.pipe(v.string(), v.url()), 'https://bedrock-runtime.{region}.amazonaws.com'),
  /** Host of the rerank API (Agent Runtime). */
  agentRuntimeHost: v.optional(v.pipe(v.string(), v.url()), 'https://bedrock-agent-runtime.{region}.amazonaws.com'),
  /** Also serve `POST /v1/rerank` (default true). */
  rerank: v.optional(v.boolean(), true),
});

export type BedrockOptions = v.InferInput<typeof OptionsSchema> & {
  /**
   * Bedrock takes image bytes, not URLs. By default an http(s) image URL is a
   * 400 naming the field. A deployment that wants URLs inlined passes a
   * resolver (e.g. a fetcher limited to its own hosts); it runs before the
   * request is built and signed.
   */
  resolveImageURL?: (url: string, signal: AbortSignal) => Promise<ResolvedImage>;
};

/** What the interceptor prepared for one attempt: the body (built once, signed) and the auth headers. */
interface Prepared {
  body: string | Buffer | null;
  headers: Record<string, string>;
  images?: ReadonlyMap<string, ResolvedImage>;
}

const isStrict = (target: Target) => target.strict_reference_compliance !== false;
const ok = (upstream: UpstreamResponse) => upstream.status >= 200 && upstream.status < 300;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function jsonBody(ctx: RequestContext, target: Target): Record<string, unknown> {
  const body = effectiveBody(ctx, target);
  if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return body;
}

function modelOf(body: Record<string, unknown>): string {
  const model = body.model;
  if (typeof model !== 'string' || model === '') throw new GatewayError('invalid_request', "'model' is required: a Bedrock model id, inference profile id or ARN.", { param: 'model' });
  return model;
}

/** `/model/{modelId}/…`, the id percent-encoded as one path segment (`:` → `%3A`, `/` → `%2F`). */
export function modelPath(model: string, operation: string): string {
  return `/model/${encodeURIComponent(model)}/${operation}`;
}

/** The credentials to sign with, or null when the target carries a Bedrock API key instead. */
export function credentialsOf(target: Target): AwsCredentials | null {
  const id = str(target.aws_access_key_id);
  const secret = str(target.aws_secret_access_key);
  if (id === undefined && secret === undefined) {
    if (str(target.api_key) !== undefined) return null;
    throw new GatewayError('unauthorized', 'Provider "bedrock" needs aws_access_key_id and aws_secret_access_key (or a Bedrock API key in api_key).', { param: 'aws_access_key_id' });
  }
  if (id === undefined) throw new GatewayError('unauthorized', 'Provider "bedrock": aws_access_key_id is missing.', { param: 'aws_access_key_id' });
  if (secret === undefined) throw new GatewayError('unauthorized', 'Provider "bedrock": aws_secret_access_key is missing.', { param: 'aws_secret_access_key' });
  const creds: AwsCredentials = { accessKeyId: id, secretAccessKey: secret };
  const token = str(target.aws_session_token);
  if (token !== undefined) creds.sessionToken = token;
  return creds;
}

/**
 * The `bedrock` provider (Amazon Bedrock Runtime, shared/providers/bedrock.md):
 * - chat → Converse / ConverseStream (`/model/{modelId}/converse[-stream]`),
 *   translated both ways; the binary event stream is decoded incrementally with CRC checks;
 * - embeddings → InvokeModel for `amazon.titan-embed-*` and `cohere.embed-*`;
 * - rerank → the Agent Runtime Rerank API (`POST /rerank`);
 * - any other path → the generic proxy, signed the same way.
 *
 * Target fields: `aws_access_key_id`, `aws_secret_access_key`, optional
 * `aws_session_token`, and `aws_region` (required: it names the host and the
 * signing scope). Or `api_key`, sent as a Bedrock API key (`Authorization:
 * Bearer`, no signing). `custom_host` replaces the scheme and host. Requests
 * are signed with SigV4 (service `bedrock`) by an interceptor, because the
 * signer is asynchronous; the body is built once there and reused by the transport.
 */
export function bedrock(options: BedrockOptions = {}): GatewayPlugin {
  const { resolveImageURL, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const prepared = new WeakMap<Target, Prepared>();

  function chatBody(ctx: RequestContext, target: Target): string {
    const cached = prepared.get(target);
    if (cached?.body != null) return cached.body as string;
    return JSON.stringify(toConverseRequest(jsonBody(ctx, target), { provider: PLUGIN_NAME, strict: isStrict(target), images: cached?.images }));
  }

  async function chatResponse(upstream: UpstreamResponse, ctx: RequestContext, target: Target): Promise<GatewayResponse> {
    if (!ok(upstream)) return bedrockErrorAnswer(upstream, await readErrorJson(upstream));
    const body = jsonBody(ctx, target);
    const model = String(body.model);
    if (body.stream === true) {
      const translator = converseStreamTranslator({ id: idFrom(upstream), model, includeUsage: wantsUsage(ctx), strict: isStrict(target), onUsage: (u) => (ctx.usage = toGatewayUsage(u)) });
      return streamAnswer(upstream, translator);
    }
    const { completion, usage } = fromConverseResponse(await readJson(upstream), { id: idFrom(upstream), model, strict: isStrict(target) });
    ctx.usage = toGatewayUsage(usage);
    return jsonAnswer(upstream, upstream.status, completion);
  }

  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: opts.runtimeHost.replace('{region}', 'us-east-1').replace(/\/$/, ''),
    authHeaders(target: Target): Record<string, string> {
      const p = prepared.get(target);
      if (p !== undefined) return { ...p.headers };
      const key = str(target.api_key);
      return key === undefined ? {} : { authorization: `Bearer ${key}` };
    },
    routes: {
      'chat.completions': {
        path: (ctx, target) => {
          const body = jsonBody(ctx, target);
          return modelPath(modelOf(body), body.stream === true ? 'converse-stream' : 'converse');
        },
        headers: (ctx, target) => ({ accept: jsonBody(ctx, target).stream === true ? 'application/vnd.amazon.eventstream' : 'application/json' }),
        body: chatBody,
        response: chatResponse,
      },
      embeddings: {
        path: (ctx, target) => modelPath(modelOf(jsonBody(ctx, target)), 'invoke'),
        headers: () => ({ accept: 'application/json' }),
        body: (ctx, target) => {
          const cached = prepared.get(target);
          if (cached?.body != null) return cached.body;
          const body = jsonBody(ctx, target);
          return JSON.stringify(toInvokeEmbedding(body, modelOf(body), PLUGIN_NAME));
        },
        response: async (upstream, ctx, target) => {
          if (!ok(upstream)) return bedrockErrorAnswer(upstream, await readErrorJson(upstream));
          const body = jsonBody(ctx, target);
          const { answer, tokens } = fromInvokeEmbedding(upstream, await readJson(upstream), String(body.model), body.encoding_format === 'base64');
          ctx.usage = { prompt_tokens: tokens, completion_tokens: 0, total_tokens: tokens };
          return jsonAnswer(upstream, upstream.status, answer);
        },
      },
      rerank: {
        path: '/rerank',
        headers: () => ({ accept: 'application/json' }),
        body: (ctx, target) => {
          const cached = prepared.get(target);
          if (cached?.body != null) return cached.body;
          const body = rerankBody(ctx, target);
          const region = regionOf(target) ?? 'us-east-1';
          return JSON.stringify(toBedrockRerank(body, documentTexts(body), rerankModelArn(upstreamModel(body, PLUGIN_NAME), region)));
        },
        response: async (upstream, ctx, target) => {
          if (!ok(upstream)) return bedrockErrorAnswer(upstream, await readErrorJson(upstream));
          const rid = upstream.headers['x-amzn-requestid'];
          return rerankAnswer(upstream, ctx, target, {
            provider: PLUGIN_NAME,
            model: upstreamModel(rerankBody(ctx, target), PLUGIN_NAME),
            id: typeof rid === 'string' ? rid : null,
            results: fromBedrockRerank(await readJson(upstream)),
          });
        },
      },
    },
  };

  return {
    name: PLUGIN_NAME,
    apply(api) {
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      if (opts.rerank) addRerankRoute(api);
      api.providers.add(PLUGIN_NAME, provider);
      const basePath = api.options.basePath;
      api.addInterceptor(
        PLUGIN_NAME,
        (next) => async (ctx, target) => {
          if (target.provider !== PLUGIN_NAME) return next(ctx, target);
          const route = ctx.route!;
          const creds = credentialsOf(target);
          const region = regionOf(target);
          const custom = str(target.custom_host);
          if (region !== null && !/^[a-z0-9-]+$/.test(region)) throw new GatewayError('invalid_request', 'aws_region may hold only lower-case letters, digits and dashes.', { param: 'aws_region' });
          if (region === null && (creds !== null || custom === undefined)) {
            throw new GatewayError('invalid_request', 'Provider "bedrock" needs aws_region (e.g. us-east-1).', { param: 'aws_region' });
          }
          const host = route.name === 'rerank' ? opts.agentRuntimeHost : opts.runtimeHost;
          const next_: Target = { ...target, custom_host: custom ?? host.replace('{region}', region!) };
          const prep: Prepared = { body: null, headers: {} };
          prepared.set(next_, prep);
          const signal = ctx.attemptSignal ?? ctx.signal;

          const adapter = provider.routes[route.name];
          let method: string;
          let url: string;
          if (adapter !== undefined) {
            if (route.name === 'chat.completions' && resolveImageURL !== undefined) {
              const urls = imageURLs(jsonBody(ctx, target));
              if (urls.length > 0) prep.images = new Map(await Promise.all(urls.map(async (u) => [u, await resolveImageURL(u, signal)] as const)));
            }
            method = route.method;
            url = baseURL(next_, provider) + (typeof adapter.path === 'string' ? adapter.path : adapter.path(ctx, next_));
            prep.body = adapter.body!(ctx, next_);
          } else {
            method = ctx.method;
            url = baseURL(next_, provider) + ctx.path.slice(basePath.length) + (ctx.query === '' ? '' : `?${ctx.query}`);
            prep.body = ctx.rawBody !== null && ctx.rawBody.length > 0 ? ctx.rawBody : null;
          }
          if (creds !== null) {
            prep.headers = await signRequest({ method, url, body: prep.body, credentials: creds, region: region!, service: 'bedrock' });
          } else {
            prep.headers = { authorization: `Bearer ${str(target.api_key)}` };
          }
          return next(ctx, next_);
        },
        BEDROCK_STAGE,
      );
    },
  };
}

export default bedrock;
