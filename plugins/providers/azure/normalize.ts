import {
  openAIErrorType,
  errorAnswer,
  type ErrorFields,
  type GatewayResponse,
  openAIFormatResponse,
  readErrorJson,
  type RequestContext,
  SSEParser,
  streamAnswer,
  type StreamTranslator,
  type Target,
  toGatewayUsage,
  type UpstreamResponse,
} from '../../../sdk/index.js';

/**
 * Azure answers are OpenAI's, with quirks (shared/providers/azure.md §4–5),
 * normalised here for `azure-openai` and `azure-ai`.
 */

type Json = Record<string, any>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An Azure error body in the gateway envelope. `{"error":{"code":"429","message"}}`
 * (string code, no type) gets a type from the status; a named code such as
 * `content_filter` or `DeploymentNotFound` becomes the type too; `param` kept.
 */
export function azureErrorFields(status: number, json: unknown, provider: string): ErrorFields {
  const inner = isObject(json) && isObject(json.error) ? json.error : isObject(json) && typeof json.message === 'string' ? json : null;
  const message = typeof inner?.message === 'string' && inner.message !== '' ? inner.message : `The provider ${provider} answered ${status}.`;
  const code = inner?.code === undefined || inner?.code === null ? null : String(inner.code);
  const type = typeof inner?.type === 'string' && inner.type !== '' ? inner.type : code !== null && !/^\d+$/.test(code) ? code : openAIErrorType(status);
  return { message, type, code, param: typeof inner?.param === 'string' ? inner.param : null };
}

export function azureErrorAnswer(upstream: UpstreamResponse, json: unknown, provider: string): GatewayResponse {
  return errorAnswer(upstream, azureErrorFields(upstream.status, json, provider));
}

/**
 * Re-emits an Azure chat (or completions) stream as plain OpenAI SSE:
 * - the prompt-filter chunk (empty `choices`, empty id/model, `created: 0`) and
 *   any other chunk left with no choice and no usage are dropped;
 * - `prompt_filter_results`, `choices[].content_filter_results` and
 *   `content_filter_offsets` are removed; a choice with no `delta` (asynchronous
 *   filter annotations) is dropped (a text-completion choice, with `text`, is kept);
 * - an empty `id`, `model`, `object` or `created` is filled from earlier chunks;
 * - an in-stream `{"error": …}` becomes the gateway's error event, then [DONE];
 * - the stream always ends with one `[DONE]`.
 * With `stripUsage` (the gateway asked for usage, the client did not), the usage is recorded but kept
 * from the client: the usage-only chunk is dropped, a `usage` object on a chunk with choices becomes `null`.
 */
export function azureStreamTranslator(ctx: RequestContext, provider: string, stripUsage = false): StreamTranslator {
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  const seen: { id?: string; model?: string; object?: string; created?: number } = {};
  let closed = false;

  const handle = (data: string): string => {
    if (closed || data === '' || data === '[DONE]') return '';
    let payload: Json;
    try {
      payload = JSON.parse(data);
    } catch {
      return '';
    }
    if (!isObject(payload)) return '';
    if (payload.error !== undefined) {
      closed = true;
      const f = azureErrorFields(500, payload, provider);
      return `data: ${JSON.stringify({ error: { message: f.message, type: f.type, param: f.param ?? null, code: f.code ?? null } })}\n\ndata: [DONE]\n\n`;
    }
    delete payload.prompt_filter_results;
    delete payload.prompt_annotations;
    if (Array.isArray(payload.choices)) {
      payload.choices = payload.choices.filter((c: unknown) => isObject(c) && (isObject(c.delta) || typeof c.text === 'string'));
      for (const c of payload.choices) {
        delete c.content_filter_results;
        delete c.content_filter_offsets;
      }
    }
    const hasUsage = isObject(payload.usage);
    if ((!Array.isArray(payload.choices) || payload.choices.length === 0) && !hasUsage) return '';
    for (const field of ['id', 'model', 'object'] as const) {
      if (typeof payload[field] === 'string' && payload[field] !== '') seen[field] = payload[field];
      else if (seen[field] !== undefined) payload[field] = seen[field];
    }
    if (typeof payload.created === 'number' && payload.created > 0) seen.created = payload.created;
    else if (seen.created !== undefined) payload.created = seen.created;
    if (hasUsage) {
      ctx.usage = toGatewayUsage(payload.usage);
      if (stripUsage) {
        if (!Array.isArray(payload.choices) || payload.choices.length === 0) return '';
        payload.usage = null;
      }
    }
    return `data: ${JSON.stringify(payload)}\n\n`;
  };

  return {
    push(chunk) {
      let out = '';
      for (const e of parser.push(decoder.decode(chunk, { stream: true }))) out += handle(e.data);
      return out;
    },
    end() {
      let out = '';
      for (const e of [...parser.push(decoder.decode()), ...parser.end()]) out += handle(e.data);
      if (closed) return out;
      closed = true;
      return out + 'data: [DONE]\n\n';
    },
  };
}

/**
 * The answer of an Azure OpenAI-format upstream (both Azure providers): errors
 * normalised, streams cleaned of Azure's filter chunks, JSON passed through.
 * `askedUsage` says whether the gateway asked this attempt for a stream's usage
 * on the client's behalf: the usage is then recorded and kept from the client.
 */
export function azureAnswer(provider: string, askedUsage?: (ctx: RequestContext, target: Target) => boolean) {
  return async (upstream: UpstreamResponse, ctx: RequestContext, target?: Target): Promise<GatewayResponse> => {
    if (upstream.status < 200 || upstream.status >= 300) return azureErrorAnswer(upstream, await readErrorJson(upstream), provider);
    const type = upstream.headers['content-type'];
    if (typeof type === 'string' && type.startsWith('text/event-stream')) {
      const strip = askedUsage !== undefined && target !== undefined && askedUsage(ctx, target);
      return streamAnswer(upstream, azureStreamTranslator(ctx, provider, strip));
    }
    return openAIFormatResponse(upstream, ctx);
  };
}
