import { createHash } from 'node:crypto';
import {
  errorAnswer,
  type ErrorFields,
  type FinishReason,
  GatewayError,
  type OpenAIUsage,
  type RequestContext,
  SSEParser,
  type StreamTranslator,
  toGatewayUsage,
  type UpstreamResponse,
} from '../../../sdk/index.js';
import type { CompatibleProvider, Quirks } from './table.js';

const OPENAI_FINISH = new Set(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']);

/** A provider's finish reason in OpenAI's terms: known values kept, quirks mapped, anything else `stop`. */
export function mapFinish(reason: unknown, quirks: Quirks | undefined): FinishReason | null {
  if (reason === null || reason === undefined) return null;
  const r = String(reason);
  if (OPENAI_FINISH.has(r)) return r as FinishReason;
  return quirks?.finishReasons?.[r] ?? 'stop';
}

/** Folds provider-specific usage fields into OpenAI's shape, in place. */
export function foldUsage(payload: Record<string, any>, quirks: Quirks | undefined): void {
  if (quirks?.usage === 'groq' && payload.usage == null && payload.x_groq?.usage) {
    const u = payload.x_groq.usage;
    payload.usage = { prompt_tokens: u.prompt_tokens ?? 0, completion_tokens: u.completion_tokens ?? 0, total_tokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0) };
  }
  const usage = payload.usage;
  if (quirks?.usage === 'deepseek' && usage && typeof usage.prompt_cache_hit_tokens === 'number' && usage.prompt_tokens_details?.cached_tokens === undefined) {
    usage.prompt_tokens_details = { ...(usage.prompt_tokens_details ?? {}), cached_tokens: usage.prompt_cache_hit_tokens };
  }
}

/** Normalises a `chat.completion` or `chat.completion.chunk` object, in place. */
export function normalizePayload(payload: Record<string, any>, quirks: Quirks | undefined): void {
  if (Array.isArray(payload.choices)) {
    for (const choice of payload.choices) {
      if (choice && 'finish_reason' in choice) choice.finish_reason = mapFinish(choice.finish_reason, quirks);
    }
  }
  foldUsage(payload, quirks);
}

/**
 * The provider's error body in the gateway envelope: nested OpenAI-style
 * errors pass through (a numeric `code` becomes a string), flat ones
 * (Mistral, older vLLM) are wrapped, anything else gets a message from the status.
 */
export function errorFields(provider: string, status: number, body: unknown): ErrorFields {
  const b = body as Record<string, any> | null;
  const inner = b && typeof b.error === 'object' && b.error !== null ? b.error : b && typeof b.message === 'string' ? b : null;
  if (inner === null) return { message: `The provider ${provider} answered ${status}.`, type: 'upstream_error', code: null };
  const message = typeof inner.message === 'string' ? inner.message : `The provider ${provider} answered ${status}.`;
  const type = typeof inner.type === 'string' ? inner.type : `${provider}_error`;
  const code = inner.code === undefined || inner.code === null ? null : String(inner.code);
  return { message, type, code, param: typeof inner.param === 'string' ? inner.param : null };
}

/** An error answer from a compatible provider, normalised. */
export async function compatibleError(row: CompatibleProvider, upstream: UpstreamResponse, text: string) {
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: the status says enough */
  }
  return errorAnswer(upstream, errorFields(row.name, upstream.status, body));
}

/**
 * Re-emits an OpenAI-format stream with each event normalised; always ends with `[DONE]`.
 * `includeUsage`: the client asked for the usage chunk. `stripUsage`: the gateway asked for usage on
 * the client's behalf, so a `usage` object on a content chunk becomes `null` too (it is recorded).
 */
export function compatibleStream(row: CompatibleProvider, ctx: RequestContext, includeUsage: boolean, stripUsage = false): StreamTranslator {
  const parser = new SSEParser();
  const quirks = row.quirks;
  let usageSent = false;
  let pendingUsage: OpenAIUsage | null = null;
  let last: Record<string, any> | null = null;
  let finished = false;

  const handle = (data: string): string => {
    if (finished) return '';
    if (data === '[DONE]') return '';
    let payload: Record<string, any>;
    try {
      payload = JSON.parse(data);
    } catch {
      return '';
    }
    if (payload.error !== undefined) {
      finished = true;
      const f = errorFields(row.name, 500, payload);
      return `data: ${JSON.stringify({ error: { message: f.message, type: f.type, param: null, code: f.code ?? null } })}\n\ndata: [DONE]\n\n`;
    }
    normalizePayload(payload, quirks);
    last = payload;
    if (payload.usage) {
      ctx.usage = toGatewayUsage(payload.usage);
      const usageOnly = Array.isArray(payload.choices) && payload.choices.length === 0;
      if (!includeUsage) {
        // The client did not ask for usage; a usage-only chunk would confuse it, usage on a content chunk is harmless
        // (but when the gateway asked for it on the client's behalf, the client gets none: `"usage":null`).
        if (usageOnly) return '';
        if (stripUsage) payload.usage = null;
      } else if (usageOnly) usageSent = true;
      else pendingUsage = payload.usage;
    }
    return `data: ${JSON.stringify(payload)}\n\n`;
  };

  return {
    push(chunk) {
      let out = '';
      for (const e of parser.push(chunk.toString('utf8'))) out += handle(e.data);
      return out;
    },
    end() {
      let out = '';
      for (const e of parser.end()) out += handle(e.data);
      if (finished) return out;
      if (includeUsage && !usageSent && pendingUsage !== null && last !== null) {
        out += `data: ${JSON.stringify({ id: last.id, object: 'chat.completion.chunk', created: last.created, model: last.model, choices: [], usage: pendingUsage })}\n\n`;
      }
      return out + 'data: [DONE]\n\n';
    },
  };
}

/** A deterministic 9-character alphanumeric id for any tool-call id, as Mistral requires. */
export function nineCharId(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  const digest = createHash('sha256').update(id).digest();
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let out = '';
  for (let i = 0; i < 9; i++) out += alphabet[digest[i]! % alphabet.length];
  return out;
}

/** Applies a provider's request quirks to a copy of the body; throws a 400 for what cannot be faked. */
export function adjustRequest(row: CompatibleProvider, body: Record<string, any>): Record<string, any> {
  const quirks = row.quirks!;
  if (quirks.singleChoice && typeof body.n === 'number' && body.n > 1) {
    throw new GatewayError('invalid_request', `Provider "${row.name}" returns one choice per request: n must be 1.`, { param: 'n' });
  }
  const out: Record<string, any> = { ...body };
  for (const field of quirks.dropFields ?? []) delete out[field];
  if ((quirks.dropMessageNames || quirks.nineCharToolIds) && Array.isArray(out.messages)) {
    out.messages = out.messages.map((m: Record<string, any>) => {
      const msg = { ...m };
      if (quirks.dropMessageNames) delete msg.name;
      if (quirks.nineCharToolIds) {
        if (Array.isArray(msg.tool_calls)) msg.tool_calls = msg.tool_calls.map((tc: Record<string, any>) => ({ ...tc, id: nineCharId(String(tc.id)) }));
        if (typeof msg.tool_call_id === 'string') msg.tool_call_id = nineCharId(msg.tool_call_id);
      }
      return msg;
    });
  }
  return out;
}
