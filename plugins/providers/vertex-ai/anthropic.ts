import {
  type GatewayResponse,
  passThrough,
  jsonAnswer,
  readJson,
  readText,
  type RequestContext,
  streamAnswer,
  toGatewayUsage,
  type UpstreamResponse,
} from '../../../sdk/index.js';
import { anthropicErrorAnswer, anthropicStreamTranslator, anthropicUsageObserver, fromAnthropicMessage, toAnthropicRequest } from '../../../sdk/anthropic/index.js';
import { geminiErrorAnswer, isGoogleError, type Json, parseErrorBody } from '../../../sdk/gemini/index.js';

/**
 * Claude on Vertex AI (shared/providers/vertex.md §7): the Anthropic Messages
 * body without `model` (it is in the URL) plus `anthropic_version:
 * "vertex-2023-10-16"`, sent to `:rawPredict` / `:streamRawPredict`; answers
 * are Anthropic's and are translated with the anthropic provider's module.
 */

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export function toVertexAnthropicRequest(body: Json, opts: { provider: string; defaultMaxTokens: number; strict: boolean }): Json {
  const native = toAnthropicRequest(body, { provider: opts.provider, defaultMaxTokens: opts.defaultMaxTokens, stream: body.stream === true, strict: opts.strict });
  const { model: _model, ...rest } = native;
  return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest };
}

/**
 * The answer of `:rawPredict` / `:streamRawPredict` in OpenAI's shape. Errors
 * may be Anthropic-shaped (`{"type":"error","error":{…}}`) or Google-shaped
 * (`{"error":{"code","status",…}}`, e.g. quota on Vertex): both are handled.
 */
export async function vertexAnthropicAnswer(
  upstream: UpstreamResponse,
  ctx: RequestContext,
  opts: { provider: string; model: string; stream: boolean; strict: boolean; includeUsage: boolean },
): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) {
    const json = parseErrorBody(await readText(upstream.body, 1024 * 1024));
    return isGoogleError(json) ? geminiErrorAnswer(upstream, json, opts.provider) : anthropicErrorAnswer(upstream, json);
  }
  if (opts.stream) {
    const translator = anthropicStreamTranslator({
      model: opts.model,
      includeUsage: opts.includeUsage,
      strict: opts.strict,
      onUsage: (usage) => {
        ctx.usage = toGatewayUsage(usage);
      },
    });
    return streamAnswer(upstream, translator);
  }
  const { completion, usage } = fromAnthropicMessage(await readJson(upstream), { strict: opts.strict });
  ctx.usage = toGatewayUsage(usage);
  return jsonAnswer(upstream, upstream.status, completion);
}

/**
 * The native Messages answer of Claude on Vertex: passed through as Anthropic
 * sent it (the door rewrites a Google-shaped error into Anthropic's envelope),
 * its usage read as it goes out.
 */
export function vertexMessagesAnswer(upstream: UpstreamResponse, ctx: RequestContext): GatewayResponse {
  const response = passThrough(upstream);
  if (upstream.status >= 200 && upstream.status < 300) {
    const type = upstream.headers['content-type'];
    response.observers = [anthropicUsageObserver(ctx, typeof type === 'string' && type.toLowerCase().startsWith('text/event-stream'))];
  }
  return response;
}
