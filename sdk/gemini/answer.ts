import type { GatewayResponse, RequestContext, UpstreamResponse } from '../../core/index.js';
import { errorAnswer, jsonAnswer, readJson, readText, streamAnswer, toGatewayUsage, wantsUsage } from '../openai/translate.js';
import { isObject, type Json } from './parts.js';
import { geminiStreamTranslator } from './stream.js';
import { fromGeminiResponse } from './translate.js';

/** Parses an error body's text; null when it is not JSON. */
export function parseErrorBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The seconds of a `google.rpc.RetryInfo` detail's `retryDelay` ("36s", "1.5s"), rounded up. */
function retryDelaySeconds(error: Json): string | null {
  if (!Array.isArray(error.details)) return null;
  for (const d of error.details) {
    if (isObject(d) && typeof d.retryDelay === 'string') {
      const m = /^(\d+(?:\.\d+)?)s$/.exec(d.retryDelay.trim());
      if (m !== null) return String(Math.ceil(Number(m[1])));
    }
  }
  return null;
}

/** Whether a parsed body is Google's error envelope `{"error":{"code","message","status"}}`. */
export function isGoogleError(body: unknown): boolean {
  const b = Array.isArray(body) ? body[0] : body;
  return isObject(b) && isObject(b.error) && (typeof b.error.status === 'string' || typeof b.error.code === 'number');
}

/**
 * A Google error answer in the gateway envelope: the upstream status, the
 * message kept, `type` = the Google status string (e.g. RESOURCE_EXHAUSTED),
 * `code` = the numeric code as a string. A `RetryInfo.retryDelay` becomes
 * `retry-after` when the upstream sent none. A body that is not Google's
 * envelope gets a message naming the provider and the status.
 */
export function geminiErrorAnswer(upstream: UpstreamResponse, body: unknown, provider: string): GatewayResponse {
  const b = Array.isArray(body) ? body[0] : body;
  const e = isObject(b) && isObject(b.error) ? b.error : null;
  const message = e !== null && typeof e.message === 'string' && e.message !== '' ? e.message : `The provider ${provider} answered ${upstream.status}.`;
  const type = e !== null && typeof e.status === 'string' ? e.status : 'upstream_error';
  const code = e !== null && (typeof e.code === 'number' || typeof e.code === 'string') ? String(e.code) : null;
  let source = upstream;
  const delay = e === null ? null : retryDelaySeconds(e);
  if (delay !== null && upstream.headers['retry-after'] === undefined) source = { ...upstream, headers: { ...upstream.headers, 'retry-after': delay } };
  return errorAnswer(source, { message, type, code });
}

/** What {@link geminiChatAnswer} needs to answer a Gemini call in OpenAI's shape. */
export interface GeminiAnswerOptions {
  /** Provider name for error messages (`google`, `vertex-ai`). */
  provider: string;
  /** The model the client asked for (after override_params). */
  model: string;
  /** Whether the request was sent to the streaming verb. */
  stream: boolean;
  /**
   * The target's `strict_reference_compliance`: when false, `thought` parts are passed on (as the stream's `reasoning_content`, the answer's `content_blocks`); when true they are dropped.
   */
  strict: boolean;
  /** Whether to send the usage chunk; default from the client's `stream_options.include_usage`. */
  includeUsage?: boolean;
}

/**
 * The answer to a Gemini `generateContent` / `streamGenerateContent` call in
 * OpenAI's shape; usage goes to `ctx.usage` for the log.
 */
export async function geminiChatAnswer(upstream: UpstreamResponse, ctx: RequestContext, opts: GeminiAnswerOptions): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) return geminiErrorAnswer(upstream, parseErrorBody(await readText(upstream.body)), opts.provider);
  if (opts.stream) {
    const translator = geminiStreamTranslator({
      model: opts.model,
      includeUsage: opts.includeUsage ?? wantsUsage(ctx),
      strict: opts.strict,
      onUsage: (u) => {
        ctx.usage = toGatewayUsage(u);
      },
    });
    return streamAnswer(upstream, translator);
  }
  const json = await readJson(upstream);
  const { completion, usage } = fromGeminiResponse(json, { model: opts.model, strict: opts.strict });
  if (usage !== null) ctx.usage = toGatewayUsage(usage);
  return jsonAnswer(upstream, upstream.status, completion);
}
