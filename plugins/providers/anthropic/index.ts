import {
  addShapedRoutes,
  effectiveBody,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  jsonAnswer,
  parseOptions,
  passThrough,
  type Provider,
  readJson,
  readText,
  type RequestContext,
  streamAnswer,
  type Target,
  toGatewayUsage,
  type UpstreamResponse,
  wantsUsage,
} from '../../../sdk/index.js';
import { AnthropicOptionsSchema, type AnthropicOptions } from './schema.js';
import { anthropicErrorAnswer, anthropicStreamTranslator, anthropicUsageObserver, fromAnthropicMessage, toAnthropicRequest } from '../../../sdk/anthropic/index.js';

export const PLUGIN_NAME = 'anthropic';
/** Without `/v1`, like Anthropic's SDKs: the route path carries it. */
export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/** Error bodies are small; a larger one is not read (the envelope still names the status). */
const MAX_ERROR_BYTES = 1024 * 1024;

export type { AnthropicOptions };
export { anthropicErrorAnswer, anthropicStreamTranslator, fromAnthropicMessage, toAnthropicRequest } from '../../../sdk/anthropic/index.js';

/** `strict_reference_compliance` defaults to true: provider extras (thinking) only when a target turns it off. */
export function isStrict(target: Target): boolean {
  return target.strict_reference_compliance !== false;
}

/**
 * The `anthropic` provider: OpenAI chat completions (JSON and SSE) translated
 * to and from the Messages API; the Messages API itself and its token count,
 * native (the `messages` front door); credentials for the generic proxy.
 * `apiKey` is the default for requests whose target sets none.
 */
export function anthropic(options: AnthropicOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, AnthropicOptionsSchema, options);

  async function response(upstream: UpstreamResponse, ctx: RequestContext, target: Target): Promise<GatewayResponse> {
    if (upstream.status < 200 || upstream.status >= 300) {
      let json: unknown = null;
      try {
        json = JSON.parse(await readText(upstream.body, MAX_ERROR_BYTES));
      } catch {
        // Not JSON (a proxy's HTML page, a cut body): the envelope carries the upstream status alone.
      }
      return anthropicErrorAnswer(upstream, json);
    }
    const strict = isStrict(target);
    const type = upstream.headers['content-type'];
    const sse = typeof type === 'string' ? type.toLowerCase().startsWith('text/event-stream') : ctx.stream;
    if (sse) {
      const translator = anthropicStreamTranslator({
        model: ctx.model ?? '',
        includeUsage: wantsUsage(ctx),
        strict,
        onUsage: (usage) => {
          ctx.usage = toGatewayUsage(usage);
        },
      });
      return streamAnswer(upstream, translator);
    }
    const { completion, usage } = fromAnthropicMessage(await readJson(upstream), { strict });
    ctx.usage = toGatewayUsage(usage);
    return jsonAnswer(upstream, upstream.status, completion);
  }

  // The Messages API, native: the client's body as sent, its anthropic-version and anthropic-beta (prompt-caching TTLs,
  // interleaved thinking, …) passed on; the answer as Anthropic sent it, usage read as it goes out.
  const nativeHeaders = (ctx: RequestContext): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const name of ['anthropic-version', 'anthropic-beta']) {
      const value = ctx.header(name);
      if (value !== undefined && value !== '') out[name] = value;
    }
    return out;
  };
  const nativeAnswer = (upstream: UpstreamResponse, ctx: RequestContext): GatewayResponse => {
    const response = passThrough(upstream);
    if (upstream.status >= 200 && upstream.status < 300) {
      const type = upstream.headers['content-type'];
      response.observers = [anthropicUsageObserver(ctx, typeof type === 'string' && type.toLowerCase().startsWith('text/event-stream'))];
    }
    return response;
  };

  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: (opts.baseURL ?? ANTHROPIC_BASE_URL).replace(/\/$/, ''),
    authHeaders(target: Target) {
      const headers: Record<string, string> = { 'anthropic-version': opts.version };
      const key = target.api_key ?? opts.apiKey;
      if (key !== undefined) headers['x-api-key'] = key;
      return headers;
    },
    routes: {
      'chat.completions': {
        path: '/v1/messages',
        body(ctx, target) {
          const body = effectiveBody(ctx, target);
          if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
          const native = toAnthropicRequest(body, {
            provider: PLUGIN_NAME,
            defaultMaxTokens: opts.defaultMaxTokens,
            stream: body.stream === true,
            strict: isStrict(target),
          });
          return JSON.stringify(native);
        },
        response,
      },
      messages: { path: '/v1/messages', headers: nativeHeaders, response: nativeAnswer },
      'messages.count_tokens': { path: '/v1/messages/count_tokens', headers: nativeHeaders, response: (upstream) => passThrough(upstream) },
    },
  };

  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default anthropic;
