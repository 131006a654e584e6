import { ChatChunkWriter, type OpenAIUsage, type SSEEvent, SSEParser, type StreamTranslator } from '../../../sdk/index.js';
import { cohereFinish, cohereUsage, isObject } from './chat.js';

export interface CohereStreamOptions {
  model: string;
  includeUsage: boolean;
  onUsage: (usage: OpenAIUsage) => void;
}

/**
 * Cohere v2 chat SSE → OpenAI chunks, incrementally (shared/providers/cohere.md §4):
 * message-start → role (its id kept); content-delta text → content;
 * tool-call-start → tool_calls index/id/name; tool-call-delta → argument
 * fragments; message-end → finish + usage chunk + [DONE], or, when it carries
 * `delta.error` (finish ERROR), an error event + [DONE]. tool-plan-delta,
 * citations and debug events are dropped. A `[DONE]` line is accepted as an end.
 */
export function cohereStreamTranslator(options: CohereStreamOptions): StreamTranslator {
  const decoder = new TextDecoder();
  const parser = new SSEParser();
  let writer: ChatChunkWriter | null = null;
  let closed = false;
  let finished = false;
  let sawCall = false;
  const w = (id?: string) => (writer ??= new ChatChunkWriter({ id, model: options.model, includeUsage: options.includeUsage }));

  const fail = (message: string, type: string): string => {
    closed = true;
    return w().error(message, type) + w().done();
  };

  const handle = (event: SSEEvent): string => {
    if (closed || event.data === '') return '';
    if (event.data === '[DONE]') {
      if (!finished) return fail('The upstream stream ended before the message was complete.', 'upstream_error');
      closed = true;
      return w().done();
    }
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return fail('The upstream sent a stream event that is not JSON.', 'upstream_error');
    }
    if (!isObject(data)) return '';
    const type = typeof data.type === 'string' ? data.type : event.event;
    const delta = isObject(data.delta) ? data.delta : {};
    const message = isObject(delta.message) ? delta.message : {};
    switch (type) {
      case 'message-start':
        return w(typeof data.id === 'string' && data.id !== '' ? data.id : undefined).role();
      case 'content-delta': {
        const content = isObject(message.content) ? message.content : {};
        return typeof content.text === 'string' ? w().text(content.text) : '';
      }
      case 'tool-call-start': {
        const call = isObject(message.tool_calls) ? message.tool_calls : {};
        const fn = isObject(call.function) ? call.function : {};
        const index = typeof data.index === 'number' ? data.index : 0;
        sawCall = true;
        let out = w().toolStart(index, String(call.id ?? `call_${index}`), String(fn.name ?? ''));
        if (typeof fn.arguments === 'string' && fn.arguments !== '') out += w().toolArgs(index, fn.arguments);
        return out;
      }
      case 'tool-call-delta': {
        const call = isObject(message.tool_calls) ? message.tool_calls : {};
        const fn = isObject(call.function) ? call.function : {};
        return typeof fn.arguments === 'string' ? w().toolArgs(typeof data.index === 'number' ? data.index : 0, fn.arguments) : '';
      }
      case 'message-end': {
        const usage = cohereUsage(delta.usage);
        options.onUsage(usage);
        if (typeof delta.error === 'string' && delta.error !== '') return fail(delta.error, 'cohere_error');
        finished = true;
        closed = true;
        const reason = delta.finish_reason === undefined && sawCall ? 'tool_calls' : cohereFinish(delta.finish_reason);
        return w().finish(reason) + w().usage(usage) + w().done();
      }
      case 'error': {
        const msg = typeof data.message === 'string' ? data.message : typeof delta.error === 'string' ? delta.error : 'The upstream stream failed.';
        return fail(msg, 'cohere_error');
      }
      default:
        return '';
    }
  };

  const run = (events: SSEEvent[]) => events.reduce((out, e) => out + handle(e), '');
  return {
    push(chunk) {
      return closed ? '' : run(parser.push(decoder.decode(chunk, { stream: true })));
    },
    end() {
      if (closed) return '';
      const out = run(parser.push(decoder.decode())) + run(parser.end());
      return closed ? out : out + fail('The upstream stream ended before the message was complete.', 'upstream_error');
    },
  };
}
