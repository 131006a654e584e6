import { toolCallDeltas } from '../openai/tool-deltas.js';
import { SSEParser } from '../sse.js';
import type { DoorStreamTranslator } from '../door-stream.js';
import { finishStatus, outputLogprobs, responseShell, responsesUsage, type ResponseMeta } from './answer.js';
import { ResponseEventWriter } from './events.js';
import { isObject } from '../json-object.js';

type Json = Record<string, unknown>;

/**
 * A chat completions SSE stream (`chat.completion.chunk` events, any provider
 * once its adapter translated it) → the Responses API event stream, event by
 * event: `response.created` and `response.in_progress` first, items opened as
 * their first delta arrives (reasoning, the message's text or refusal, each
 * function call with its argument fragments), closed with their `…done`
 * events, then `response.completed` (or `response.incomplete` for a
 * `length` / `content_filter` finish) with the usage. An in-band error event
 * or a stream cut short becomes `error` and `response.failed`.
 */
export function chatToResponsesStream(meta: ResponseMeta): DoorStreamTranslator & { readonly writer: ResponseEventWriter } {
  const writer = new ResponseEventWriter(responseShell(meta));
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  let finish: unknown = null;
  let usage: Json | null = null;
  let named = false;

  const complete = (): string => {
    const { status, reason } = finishStatus(finish);
    return writer.finish(status, reason, usage);
  };

  const handle = (data: string): string => {
    if (writer.finished || data === '') return '';
    if (data === '[DONE]') return finish === null ? '' : complete();
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return writer.fail('server_error', 'The upstream sent a stream event that is not JSON.');
    }
    if (!isObject(chunk)) return '';
    if (isObject(chunk.error)) {
      const e = chunk.error;
      const code = typeof e.code === 'string' && e.code !== '' ? e.code : typeof e.type === 'string' && e.type !== '' ? e.type : 'server_error';
      return writer.fail(code, typeof e.message === 'string' && e.message !== '' ? e.message : 'The upstream stream failed.', usage);
    }
    if (!named && typeof chunk.model === 'string' && chunk.model !== '') {
      writer.response.model = chunk.model;
      named = true;
    }
    if (isObject(chunk.usage)) usage = responsesUsage(chunk.usage);
    const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c: unknown) => isObject(c) && (c.index ?? 0) === 0) : undefined;
    if (!isObject(choice)) return '';
    let out = '';
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.reasoning_content === 'string') out += writer.reasoning(delta.reasoning_content);
    if (typeof delta.content === 'string') out += writer.text(delta.content, 'output_text', outputLogprobs(choice.logprobs));
    if (typeof delta.refusal === 'string') out += writer.text(delta.refusal, 'refusal');
    out += toolCallDeltas(delta, 'call_', (key, id, name) => writer.callStart(key, id, name), (key, text) => writer.callArguments(key, text));
    if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
    return out;
  };

  const run = (text: string, last: boolean): string => parser.map(text, last, handle);

  return {
    writer,
    start: () => writer.start(),
    push: (chunk) => (writer.finished ? '' : run(decoder.decode(chunk, { stream: true }), false)),
    end() {
      if (writer.finished) return '';
      const out = run(decoder.decode(), true);
      if (writer.finished) return out;
      // No [DONE]: a finish reason means the answer was whole; without one it was cut short.
      return out + (finish !== null ? complete() : writer.fail('server_error', 'The upstream stream ended before the answer was complete.', usage));
    },
    fail: (message) => writer.fail('server_error', message, usage),
  };
}
