import * as v from 'valibot';
import {
  addRerankRoute,
  addShapedRoutes,
  documentTexts,
  effectiveBody,
  fieldSchema as f,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  jsonAnswer,
  parseOptions,
  type Provider,
  readErrorJson,
  readJson,
  type RequestContext,
  rerankAnswer,
  rerankBody,
  streamAnswer,
  type Target,
  type TargetField,
  toGatewayUsage,
  upstreamModel,
  type UpstreamResponse,
  wantsUsage,
} from '../../../sdk/index.js';
import { bedrockErrorAnswer, converseStreamTranslator, fromConverseResponse, idFrom } from './answer.js';
import { imageURLs, toConverseRequest } from './converse.js';
import { fromInvokeEmbedding, toInvokeEmbedding } from './embeddings.js';
import { invokeImagesRoute } from './images.js';
import { invokeMessagesAnswer, isAnthropicModelId, toInvokeMessages } from './invoke.js';
import { fromBedrockRerank, regionOf, rerankModelArn, toBedrockRerank } from './rerank.js';
import { signRequest, type AwsCredentials } from './sign.js';

export const PLUGIN_NAME = 'bedrock';

/**
 * The target fields Bedrock reads (the spec's `cloudA_` stand-ins): the AWS
 * credentials to sign with, and the region that names the host and the
 * signing scope.
 */
export const BEDROCK_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  aws_access_key_id: {
    schema: f.string(),
    credential: true,
    inherit: 'same-provider',
    aliases: ['cloudA_access_key_id'],
    combination: ['provider', 'aws_access_key_id', 'aws_secret_access_key'],
  },
  aws_secret_access_key: { schema: f.string(), credential: true, inherit: 'same-provider', aliases: ['cloudA_secret_access_key'] },
  aws_region: { schema: f.string(), placement: true, inherit: 'same-provider', aliases: ['cloudA_region'] },
  aws_session_token: { schema: f.string(), credential: true, inherit: 'same-provider', aliases: ['cloudA_session_token'] },
});

export { signRequest, type AwsCredentials, type SignInput } from './sign.js';
export { EventStreamDecoder, EventStreamError, encodeMessage } from './eventstream.js';
export { toConverseRequest } from './converse.js';
export { fromConverseResponse, converseStreamTranslator, bedrockErrorAnswer, bedrockFinish, bedrockUsage, EXCEPTION_STATUS } from './answer.js';
export { toInvokeEmbedding, embeddingFamily } from './embeddings.js';
export { toBedrockRerank, rerankModelArn } from './rerank.js';
export { BEDROCK_ANTHROPIC_VERSION, invokeStreamTranslator, isAnthropicModelId, toInvokeMessages } from './invoke.js';

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

/** The region a target calls: required to sign, and to build the host unless `custom_host` replaces it. */
function checkedRegion(target: Target, creds: AwsCredentials | null): string | null {
  const region = regionOf(target);
  if (region !== null && !/^[a-z0-9-]+$/.test(region)) throw new GatewayError('invalid_request', 'aws_region may hold only lower-case letters, digits and dashes.', { param: 'aws_region' });
  if (region === null && (creds !== null || str(target.custom_host) === undefined)) {
    throw new GatewayError('invalid_request', 'Provider "bedrock" needs aws_region (e.g. us-east-1).', { param: 'aws_region' });
  }
  return region;
}

/**
 * The `bedrock` provider (Amazon Bedrock Runtime, shared/providers/bedrock.md):
 * - chat → Converse / ConverseStream (`/model/{modelId}/converse[-stream]`),
 *   translated both ways; the binary event stream is decoded incrementally with CRC checks;
 * - embeddings → InvokeModel for `amazon.titan-embed-*` and `cohere.embed-*`;
 * - rerank → the Agent Runtime Rerank API (`POST /rerank`);
 * - the Messages API (the `messages` front door), native for Claude through
 *   InvokeModel / InvokeModelWithResponseStream with Anthropic's body;
 * - any other path → the generic proxy, signed the same way.
 *
 * Target fields: `aws_access_key_id`, `aws_secret_access_key`, optional
 * `aws_session_token`, and `aws_region` (required: it names the host and the
 * signing scope). Or `api_key`, sent as a Bedrock API key (`Authorization:
 * Bearer`, no signing). `custom_host` replaces the scheme and host. Each
 * attempt is signed with SigV4 (service `bedrock`) in `prepare`, once the
 * request is built, so a retry is signed afresh.
 */
export function bedrock(options: BedrockOptions = {}): GatewayPlugin {
  const { resolveImageURL, ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);

  /** The Converse body; with a resolver, http(s) image URLs are fetched and inlined first. */
  function chatBody(ctx: RequestContext, target: Target): string | Promise<string> {
    const body = jsonBody(ctx, target);
    const build = (images?: ReadonlyMap<string, ResolvedImage>) => JSON.stringify(toConverseRequest(body, { provider: PLUGIN_NAME, strict: isStrict(target), images }));
    const urls = resolveImageURL === undefined ? [] : imageURLs(body);
    if (urls.length === 0) return build();
    const signal = ctx.attemptSignal ?? ctx.signal;
    return Promise.all(urls.map(async (u) => [u, await resolveImageURL!(u, signal)] as const)).then((pairs) => build(new Map(pairs)));
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
    // AWS bills by the model id called (a `global.` or regional inference profile has its own price); InvokeModel answers name the bare model.
    billedModel: 'requested',
    baseURL(target, ctx) {
      const custom = str(target.custom_host);
      if (custom !== undefined) return custom.replace(/\/+$/, '');
      const host = ctx.route?.name === 'rerank' ? opts.agentRuntimeHost : opts.runtimeHost;
      // authHeaders ran first and checked the region; checked again here so the host never holds a bad one.
      return host.replace('{region}', checkedRegion(target, null)!).replace(/\/$/, '');
    },
    // Checked before anything is built: the credentials (401), then the region (400).
    authHeaders(target: Target): Record<string, string> {
      const creds = credentialsOf(target);
      checkedRegion(target, creds);
      return creds === null ? { authorization: `Bearer ${str(target.api_key)}` } : {};
    },
    // SigV4 over the request as built (shaped or proxied), once per attempt.
    async prepare(request, target) {
      const creds = credentialsOf(target);
      if (creds === null) return;
      const region = checkedRegion(target, creds)!;
      Object.assign(request.headers, await signRequest({ method: request.method, url: request.url, body: request.body, credentials: creds, region, service: 'bedrock' }));
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
      // The Messages API, native for Claude (InvokeModel with Anthropic's body); other models take the door's translation to Converse.
      messages: {
        accepts: (ctx, target) => isAnthropicModelId(String(jsonBody(ctx, target).model ?? '')),
        path: (ctx, target) => {
          const body = jsonBody(ctx, target);
          return modelPath(modelOf(body), body.stream === true ? 'invoke-with-response-stream' : 'invoke');
        },
        headers: (ctx, target) => ({ accept: jsonBody(ctx, target).stream === true ? 'application/vnd.amazon.eventstream' : 'application/json' }),
        body: (ctx, target) => JSON.stringify(toInvokeMessages(jsonBody(ctx, target), ctx.header('anthropic-beta'))),
        response: async (upstream, ctx, target) => {
          if (!ok(upstream)) return bedrockErrorAnswer(upstream, await readErrorJson(upstream));
          return invokeMessagesAnswer(upstream, ctx, jsonBody(ctx, target).stream === true);
        },
      },
      embeddings: {
        path: (ctx, target) => modelPath(modelOf(jsonBody(ctx, target)), 'invoke'),
        headers: () => ({ accept: 'application/json' }),
        body: (ctx, target) => {
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
      // Nova Canvas and Titan Image Generator through InvokeModel (images.ts), for the media plugin's `POST /v1/images/generations`.
      'images.generations': invokeImagesRoute(PLUGIN_NAME, modelPath),
      rerank: {
        path: '/rerank',
        headers: () => ({ accept: 'application/json' }),
        body: (ctx, target) => {
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
    targetFields: BEDROCK_FIELDS,
    state: [
      { name: 'signers', scope: 'credential', keyedBy: 'AWS request signers, by the credentials, region and service they sign for.' },
    ],
    apply(api) {
      addShapedRoutes(api, ['chat.completions', 'embeddings']);
      if (opts.rerank) addRerankRoute(api);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default bedrock;
