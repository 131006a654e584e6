import { randomBytes } from 'node:crypto';
import { isObject } from '../json-object.js';

/**
 * Chat completions answers in Anthropic's Messages shape (the Messages door's
 * translated answers), and Anthropic's error envelope. Pure.
 */

type Json = Record<string, unknown>;

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** A message id in Anthropic's style, for answers the gateway makes. */
export function messageId(): string {
  return `msg_${randomBytes(12).toString('base64url')}`;
}

/** Chat `finish_reason` → Anthropic `stop_reason`. */
const STOP: Readonly<Record<string, string>> = Object.freeze({ stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', function_call: 'tool_use', content_filter: 'refusal' });

/** Chat `finish_reason` → Anthropic `stop_reason` (`stop` → `end_turn`, `length` → `max_tokens`, tool calls → `tool_use`, …); `end_turn` when unknown. */
export function stopReason(finish: unknown): string {
  return (typeof finish === 'string' ? STOP[finish] : undefined) ?? 'end_turn';
}

/**
 * Chat usage → Anthropic usage. Chat's `prompt_tokens` include cache reads and
 * writes, Anthropic's `input_tokens` do not: input = prompt − cached − written,
 * the cached tokens come back as `cache_read_input_tokens` and the written ones
 * (`prompt_tokens_details.cache_write_tokens`) as `cache_creation_input_tokens`.
 */
export function messagesUsage(usage: unknown): Json {
  const u = isObject(usage) ? usage : {};
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const cached = num(details.cached_tokens);
  const written = num(details.cache_write_tokens);
  return { input_tokens: Math.max(0, num(u.prompt_tokens) - cached - written), cache_creation_input_tokens: written, cache_read_input_tokens: cached, output_tokens: num(u.completion_tokens) };
}

/**
 * A `chat.completion` → an Anthropic `message`: text, then `tool_use` blocks
 * (`input` parsed from the arguments; arguments that are not a JSON object
 * become `{}`), the stop reason and the usage.
 */
export function chatToMessage(completion: Json, fallbackModel: string): Json {
  const choice = Array.isArray(completion.choices) && isObject(completion.choices[0]) ? completion.choices[0] : {};
  const message = isObject(choice.message) ? choice.message : {};
  const content: Json[] = [];
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content });
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'text', text: message.refusal });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls as unknown[]) {
      if (!isObject(call) || !isObject(call.function)) continue;
      content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseInput(call.function.arguments) });
    }
  }
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: typeof completion.model === 'string' && completion.model !== '' ? completion.model : fallbackModel,
    content,
    stop_reason: stopReason(choice.finish_reason),
    stop_sequence: null,
    usage: messagesUsage(completion.usage),
  };
}

/** A tool call's chat `arguments` (a JSON string, or already an object) as Anthropic's `input` object; `{}` when they do not parse to one. */
export function parseInput(args: unknown): Json {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args === '') return {};
  try {
    const value: unknown = JSON.parse(args);
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

/** Anthropic's error type for an HTTP status (shared/providers/anthropic.md §5). */
export function errorTypeForStatus(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
    case 504:
      return 'timeout_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** The status Anthropic's clients get for a gateway status: an overloaded upstream (503) is Anthropic's 529; the rest are kept. */
export function messagesStatus(status: number): number {
  return status === 503 ? 529 : status;
}

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody(status: number, message: string, type?: string | null): Json {
  return { type: 'error', error: { type: type ?? errorTypeForStatus(status), message } };
}
