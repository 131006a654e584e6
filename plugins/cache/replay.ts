import { isObject, anthropic, ChatChunkWriter, type FinishReason, type GatewayResponse, type OpenAIUsage, responses } from '../../sdk/index.js';
import type { CachedAnswer } from './types.js';

type Json = Record<string, unknown>;

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } as const;

/** A stored answer as JSON, exactly the bytes that were stored. */
export function jsonHit(answer: CachedAnswer): GatewayResponse {
  return { status: answer.status, headers: { 'content-type': 'application/json' }, body: answer.body, observers: null };
}

/**
 * A stored answer replayed as an OpenAI SSE stream, or null when it cannot be
 * replayed faithfully (then the request is a miss and the new answer replaces it).
 */
export function streamHit(answer: CachedAnswer, includeUsage: boolean): GatewayResponse | null {
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
  } catch {
    return null;
  }
  if (!isObject(json)) return null;
  const usage = isObject(json.usage) ? (json.usage as unknown as OpenAIUsage) : null;
  // The client asked for a usage chunk, and the stored answer has none to give.
  if (includeUsage && usage === null && answer.route !== 'responses' && answer.route !== 'messages') return null;
  const text =
    answer.route === 'chat.completions'
      ? chatEvents(json, includeUsage, usage)
      : answer.route === 'completions'
        ? completionEvents(json, includeUsage, usage)
        : answer.route === 'responses'
          ? responses.replayResponse(json)
          : answer.route === 'messages'
            ? anthropic.replayMessage(json)
            : null;
  if (text === null) return null;
  return { status: answer.status, headers: { ...SSE_HEADERS }, body: text, observers: null };
}

/**
 * `chat.completion` → role chunk, content, tool calls, `finish_reason`, the
 * usage chunk when asked, `[DONE]`. One choice only: ChatChunkWriter writes
 * choice 0, and an answer with logprobs, a refusal or a legacy
 * `function_call` would lose them, so those are not replayed as a stream.
 */
function chatEvents(json: Json, includeUsage: boolean, usage: OpenAIUsage | null): string | null {
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const choice = choices[0] as unknown;
  if (!isObject(choice) || !isObject(choice.message) || typeof choice.finish_reason !== 'string') return null;
  if (choice.logprobs !== undefined && choice.logprobs !== null) return null;
  const message = choice.message;
  if ((message.refusal !== undefined && message.refusal !== null) || (message.function_call !== undefined && message.function_call !== null)) return null;
  const calls = message.tool_calls;
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) return null;

  const writer = new ChatChunkWriter({
    ...(typeof json.id === 'string' ? { id: json.id } : {}),
    ...(typeof json.created === 'number' ? { created: json.created } : {}),
    model: typeof json.model === 'string' ? json.model : '',
    includeUsage,
  });
  let out = writer.role();
  if (typeof message.content === 'string') out += writer.text(message.content);
  if (Array.isArray(calls)) {
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i] as unknown;
      if (!isObject(call) || !isObject(call.function)) return null;
      const fn = call.function;
      out += writer.toolStart(i, String(call.id ?? ''), String(fn.name ?? ''));
      out += writer.toolArgs(i, String(fn.arguments ?? ''));
    }
  }
  out += writer.finish(choice.finish_reason as FinishReason);
  if (includeUsage && usage !== null) out += writer.usage(usage);
  return out + writer.done();
}

/** `text_completion` → one chunk of text per choice, one with its `finish_reason`, the usage chunk when asked, `[DONE]`. */
function completionEvents(json: Json, includeUsage: boolean, usage: OpenAIUsage | null): string | null {
  const choices = json.choices;
  if (!Array.isArray(choices) || choices.length === 0) return null;
  const base = { id: json.id, object: 'text_completion', created: json.created, model: json.model };
  const event = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
  let out = '';
  for (const c of choices as unknown[]) {
    if (!isObject(c) || typeof c.index !== 'number' || typeof c.text !== 'string' || typeof c.finish_reason !== 'string') return null;
    if (c.logprobs !== undefined && c.logprobs !== null) return null;
    out += event({ ...base, choices: [{ text: c.text, index: c.index, logprobs: null, finish_reason: null }] });
    out += event({ ...base, choices: [{ text: '', index: c.index, logprobs: null, finish_reason: c.finish_reason }] });
  }
  if (includeUsage && usage !== null) out += event({ ...base, choices: [], usage });
  return out + 'data: [DONE]\n\n';
}
