import {
  openAIErrorType,
  ChatChunkWriter,
  completionId,
  errorAnswer,
  type FinishReason,
  GatewayError,
  type GatewayResponse,
  openAIUsage,
  type OpenAIUsage,
  type StreamTranslator,
  type UpstreamResponse,
} from '../../../sdk/index.js';
import { isObject } from './converse.js';
import { EventStreamDecoder, translateEventStream, type EventMessage } from './eventstream.js';

type Json = Record<string, unknown>;

/** Bedrock `stopReason` → OpenAI `finish_reason` (bedrock.md §4); unknown reasons are `stop`. */
const FINISH: Readonly<Record<string, FinishReason>> = Object.freeze({
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
});

export function bedrockFinish(reason: unknown): FinishReason {
  return (typeof reason === 'string' ? FINISH[reason] : undefined) ?? 'stop';
}

/**
 * Converse usage → OpenAI: prompt = input + cache reads + cache writes; cached = cache reads; the
 * writes apart (`cache_write_tokens`, billed above input), the 1-hour ones among them from
 * `cacheDetails` (`[{ ttl: "1h", inputTokens }]`).
 */
export function bedrockUsage(usage: unknown): OpenAIUsage {
  const u = isObject(usage) ? usage : {};
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const read = n(u.cacheReadInputTokens);
  const written = n(u.cacheWriteInputTokens);
  let hour = 0;
  if (Array.isArray(u.cacheDetails)) for (const d of u.cacheDetails) if (isObject(d) && d.ttl === '1h') hour += n(d.inputTokens);
  return openAIUsage(n(u.inputTokens) + read + written, n(u.outputTokens), read, undefined, written > 0 ? { cacheWrite: written, cacheWrite1h: Math.min(hour, written) } : undefined);
}

/** `chatcmpl-<x-amzn-RequestId>`, or a random id when the header is missing. */
export function idFrom(upstream: UpstreamResponse): string {
  const rid = upstream.headers['x-amzn-requestid'];
  return typeof rid === 'string' && rid !== '' ? `chatcmpl-${rid}` : completionId();
}

/** A Converse response → `chat.completion`. With `strict: false`, reasoning goes to `message.content_blocks` as thinking blocks. */
export function fromConverseResponse(json: unknown, opts: { id: string; model: string; strict: boolean }): { completion: Json; usage: OpenAIUsage } {
  const output = isObject(json) && isObject(json.output) ? json.output : null;
  const msg = output !== null && isObject(output.message) ? output.message : null;
  if (msg === null || !Array.isArray(msg.content)) throw new GatewayError('upstream_invalid_response', 'The upstream answer is not a Converse response.');
  let text = '';
  let hasText = false;
  const calls: Json[] = [];
  const blocks: Json[] = [];
  for (const block of msg.content as unknown[]) {
    if (!isObject(block)) continue;
    if (typeof block.text === 'string') {
      text += block.text;
      hasText = true;
      blocks.push({ type: 'text', text: block.text });
    } else if (isObject(block.toolUse)) {
      const t = block.toolUse;
      calls.push({ id: String(t.toolUseId), type: 'function', function: { name: String(t.name), arguments: JSON.stringify(t.input ?? {}) } });
    } else if (isObject(block.reasoningContent) && isObject(block.reasoningContent.reasoningText)) {
      const r = block.reasoningContent.reasoningText;
      blocks.push({ type: 'thinking', thinking: r.text, signature: r.signature });
    }
  }
  // `refusal` is required (a string or null) on every choice's message by OpenAI's schema.
  const message: Json = { role: 'assistant', content: hasText || calls.length === 0 ? text : null, refusal: null };
  if (calls.length > 0) message.tool_calls = calls;
  if (!opts.strict && blocks.some((b) => b.type === 'thinking')) message.content_blocks = blocks;
  const usage = bedrockUsage((json as Json).usage);
  return {
    completion: {
      id: opts.id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: opts.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: bedrockFinish((json as Json).stopReason) }],
      usage,
    },
    usage,
  };
}

/**
 * Exception name → HTTP status the client gets (bedrock.md §6): the five the
 * gateway promises (Throttling 429, Validation 400, AccessDenied 403,
 * ModelTimeout 408, ServiceUnavailable 503) plus the rest of the table
 * (quota → 429, model errors → 502, auth errors → 401/403).
 */
export const EXCEPTION_STATUS: Readonly<Record<string, number>> = Object.freeze({
  ValidationException: 400,
  ConflictException: 400,
  ServiceQuotaExceededException: 429,
  AccessDeniedException: 403,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 408,
  ModelErrorException: 502,
  ModelStreamErrorException: 502,
  ThrottlingException: 429,
  ModelNotReadyException: 429,
  InternalServerException: 500,
  ServiceUnavailableException: 503,
  UnrecognizedClientException: 401,
  InvalidSignatureException: 403,
  InvalidClientTokenId: 403,
  ExpiredTokenException: 403,
  IncompleteSignature: 400,
  RequestExpired: 400,
});

/** The exception name of an error answer: `x-amzn-ErrorType` (suffix after `:` dropped), else the body's `__type` / `code`. */
export function exceptionName(upstream: UpstreamResponse, json: unknown): string | null {
  const header = upstream.headers['x-amzn-errortype'];
  let name: unknown = typeof header === 'string' && header !== '' ? header : undefined;
  if (name === undefined && isObject(json)) name = json.__type ?? json.code;
  if (typeof name !== 'string' || name === '') return null;
  name = name.split(':')[0]!;
  return (name as string).split('#').at(-1)!;
}

/** A Bedrock error answer in the gateway envelope, with the status mapped from the exception name; `code` is the exception name. */
export function bedrockErrorAnswer(upstream: UpstreamResponse, json: unknown): GatewayResponse {
  const name = exceptionName(upstream, json);
  const status = (name !== null ? EXCEPTION_STATUS[name] : undefined) ?? upstream.status;
  const j = isObject(json) ? json : {};
  const message = typeof j.message === 'string' && j.message !== '' ? j.message : typeof j.Message === 'string' && j.Message !== '' ? j.Message : `The upstream answered ${upstream.status}${name === null ? '' : ` (${name})`}.`;
  return errorAnswer(upstream, { message, type: openAIErrorType(status), code: name }, status);
}

export interface ConverseStreamOptions {
  id: string;
  model: string;
  includeUsage: boolean;
  strict: boolean;
  onUsage: (usage: OpenAIUsage) => void;
}

/**
 * ConverseStream's binary event stream → OpenAI chunks (bedrock.md §5d),
 * incrementally. messageStart → role; contentBlockStart(toolUse) → tool call
 * id/name; contentBlockDelta text / toolUse.input / reasoningContent.text →
 * content / argument fragments / reasoning_content (strict false only);
 * messageStop → finish; metadata → usage chunk (include_usage) and [DONE].
 * An exception frame, a bad CRC or a bad length → an SSE error event and
 * [DONE]; later bytes are ignored.
 */
export function converseStreamTranslator(options: ConverseStreamOptions): StreamTranslator {
  const decoder = new EventStreamDecoder();
  const w = new ChatChunkWriter({ id: options.id, model: options.model, includeUsage: options.includeUsage });
  const tools = new Map<number, { index: number; sentArgs: boolean }>();
  let usage: OpenAIUsage | null = null;
  let finished = false;
  let closed = false;

  const fail = (message: string, type: string, code: string | null = null): string => {
    closed = true;
    if (usage !== null) options.onUsage(usage);
    return w.error(message, type, code) + w.done();
  };
  const complete = (): string => {
    closed = true;
    let out = finished ? '' : w.finish('stop');
    if (usage !== null) {
      options.onUsage(usage);
      out += w.usage(usage);
    }
    return out + w.done();
  };

  const handle = (m: EventMessage): string => {
    if (closed) return '';
    const kind = m.headers[':message-type'];
    let payload: Json = {};
    try {
      const parsed: unknown = m.payload === '' ? {} : JSON.parse(m.payload);
      if (isObject(parsed)) payload = parsed;
    } catch {
      if (kind === 'event') return fail('The upstream sent a stream event that is not JSON.', 'upstream_error');
    }
    if (kind === 'exception' || kind === 'error') {
      const type = m.headers[':exception-type'] ?? m.headers[':error-code'] ?? 'upstreamException';
      const message = typeof payload.message === 'string' && payload.message !== '' ? payload.message : (m.headers[':error-message'] ?? `The upstream stream failed (${type}).`);
      return fail(message, type, type);
    }
    if (kind !== 'event') return '';
    const index = typeof payload.contentBlockIndex === 'number' ? payload.contentBlockIndex : 0;
    switch (m.headers[':event-type']) {
      case 'messageStart':
        return w.role();
      case 'contentBlockStart': {
        const start = isObject(payload.start) ? payload.start : {};
        if (!isObject(start.toolUse)) return '';
        const tool = { index: tools.size, sentArgs: false };
        tools.set(index, tool);
        return w.toolStart(tool.index, String(start.toolUse.toolUseId), String(start.toolUse.name));
      }
      case 'contentBlockDelta': {
        const delta = isObject(payload.delta) ? payload.delta : {};
        if (typeof delta.text === 'string') return w.text(delta.text);
        if (isObject(delta.toolUse) && typeof delta.toolUse.input === 'string') {
          const tool = tools.get(index);
          if (tool === undefined || delta.toolUse.input === '') return '';
          tool.sentArgs = true;
          return w.toolArgs(tool.index, delta.toolUse.input);
        }
        if (isObject(delta.reasoningContent) && typeof delta.reasoningContent.text === 'string' && !options.strict) return w.reasoning(delta.reasoningContent.text);
        return '';
      }
      case 'contentBlockStop': {
        const tool = tools.get(index);
        if (tool === undefined || tool.sentArgs) return '';
        tool.sentArgs = true;
        return w.toolArgs(tool.index, '{}');
      }
      case 'messageStop':
        if (finished) return '';
        finished = true;
        return w.finish(bedrockFinish(payload.stopReason));
      case 'metadata':
        usage = bedrockUsage(payload.usage);
        return finished ? complete() : '';
      default:
        return '';
    }
  };

  return {
    push(chunk) {
      if (closed) return '';
      return translateEventStream(decoder, chunk, handle, (reason) => fail(`The upstream event stream is corrupt: ${reason}`, 'upstream_error', 'invalid_event_stream'));
    },
    end() {
      if (closed) return '';
      if (decoder.pending > 0) return fail('The upstream event stream ended inside a message.', 'upstream_error', 'invalid_event_stream');
      return finished ? complete() : fail('The upstream stream ended before the message was complete.', 'upstream_error');
    },
  };
}
