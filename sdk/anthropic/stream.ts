import { ChatChunkWriter, type OpenAIUsage } from '../openai/chunks.js';
import { SSEParser, type SSEEvent } from '../sse.js';
import type { StreamTranslator } from '../openai/translate.js';
import { finishReason, mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';
import { isObject } from '../json-object.js';

/** What {@link anthropicStreamTranslator} needs to turn Anthropic's event stream into chat completion chunks. */
export interface AnthropicStreamOptions {
  /** Model named in the chunks until `message_start` names the upstream's. */
  model: string;
  /** The client asked for the usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** When false, thinking deltas go out as `delta.reasoning_content`; when true they are dropped. */
  strict: boolean;
  /** Called with the final usage (at `message_stop`, or with what is known when the stream fails). */
  onUsage: (usage: OpenAIUsage) => void;
}

type Json = Record<string, unknown>;

/** A tool_use block being streamed: its OpenAI tool_calls index and whether any argument text went out. */
interface ToolState {
  index: number;
  sentArgs: boolean;
}

/**
 * Anthropic Messages SSE → OpenAI `chat.completion.chunk` SSE, incrementally.
 * Bytes may be cut anywhere (inside a UTF-8 character, a line or an event):
 * the decoder and the SSE parser hold partial input until it completes.
 *
 * message_start → role chunk; text_delta → content; tool_use start → tool_calls
 * index/id/name, input_json_delta → argument fragments; thinking_delta →
 * reasoning_content (strict false only); message_delta → finish_reason;
 * message_stop → usage chunk (include_usage only) and [DONE]; `error` → an
 * OpenAI error event and [DONE], the rest ignored; ping and unknown events → nothing.
 */
export function anthropicStreamTranslator(options: AnthropicStreamOptions): StreamTranslator {
  const decoder = new TextDecoder();
  const parser = new SSEParser();
  const counts: AnthropicCounts = {};
  const tools = new Map<number, ToolState>();
  let writer: ChatChunkWriter | null = null;
  let nextTool = 0;
  let started = false;
  let finished = false;
  let closed = false;

  const w = (id?: string): ChatChunkWriter => (writer ??= new ChatChunkWriter({ id, model: options.model, includeUsage: options.includeUsage }));

  const complete = (): string => {
    let out = '';
    if (!finished) {
      finished = true;
      out += w().finish('stop');
    }
    closed = true;
    const usage = usageFromCounts(counts);
    options.onUsage(usage);
    return out + w().usage(usage) + w().done();
  };

  const fail = (message: string, type: string): string => {
    closed = true;
    if (started) options.onUsage(usageFromCounts(counts));
    return w().error(message, type) + w().done();
  };

  const handle = (event: SSEEvent): string => {
    if (closed || event.data === '') return '';
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return fail('The upstream sent a stream event that is not JSON.', 'upstream_error');
    }
    if (!isObject(data)) return fail('The upstream sent a stream event that is not a JSON object.', 'upstream_error');
    const type = typeof data.type === 'string' ? data.type : event.event;
    switch (type) {
      case 'message_start': {
        const message = isObject(data.message) ? data.message : {};
        const chunks = w(typeof message.id === 'string' && message.id !== '' ? message.id : undefined);
        if (typeof message.model === 'string' && message.model !== '') chunks.model = message.model;
        mergeCounts(counts, message.usage);
        started = true;
        return chunks.role();
      }
      case 'content_block_start': {
        const block = isObject(data.content_block) ? data.content_block : {};
        if (block.type !== 'tool_use' || typeof data.index !== 'number') return '';
        const tool: ToolState = { index: nextTool++, sentArgs: false };
        tools.set(data.index, tool);
        return w().toolStart(tool.index, String(block.id), String(block.name));
      }
      case 'content_block_delta': {
        const delta = isObject(data.delta) ? data.delta : {};
        switch (delta.type) {
          case 'text_delta':
            return typeof delta.text === 'string' ? w().text(delta.text) : '';
          case 'input_json_delta': {
            const tool = typeof data.index === 'number' ? tools.get(data.index) : undefined;
            if (tool === undefined || typeof delta.partial_json !== 'string' || delta.partial_json === '') return '';
            tool.sentArgs = true;
            return w().toolArgs(tool.index, delta.partial_json);
          }
          case 'thinking_delta':
            return !options.strict && typeof delta.thinking === 'string' ? w().reasoning(delta.thinking) : '';
          default:
            // signature_delta, citations_delta and future deltas have no chunk equivalent.
            return '';
        }
      }
      case 'content_block_stop': {
        const tool = typeof data.index === 'number' ? tools.get(data.index) : undefined;
        // A tool without arguments still gets valid JSON arguments.
        if (tool === undefined || tool.sentArgs) return '';
        tool.sentArgs = true;
        return w().toolArgs(tool.index, '{}');
      }
      case 'message_delta': {
        mergeCounts(counts, data.usage);
        const delta = isObject(data.delta) ? data.delta : {};
        if (finished || delta.stop_reason == null) return '';
        finished = true;
        return w().finish(finishReason(delta.stop_reason));
      }
      case 'message_stop':
        return complete();
      case 'error': {
        const error = isObject(data.error) ? data.error : {};
        const message = typeof error.message === 'string' && error.message !== '' ? error.message : 'The upstream stream failed.';
        return fail(message, typeof error.type === 'string' ? error.type : 'api_error');
      }
      default:
        // ping, and event types added after this was written.
        return '';
    }
  };

  const run = (events: SSEEvent[]): string => {
    let out = '';
    for (const event of events) out += handle(event);
    return out;
  };

  return {
    push(chunk) {
      if (closed) return '';
      return run(parser.push(decoder.decode(chunk, { stream: true })));
    },
    end() {
      if (closed) return '';
      let out = run(parser.push(decoder.decode()));
      out += run(parser.end());
      if (closed) return out;
      // The upstream ended without message_stop: finish cleanly if the answer was complete, else say so.
      return out + (finished ? complete() : fail('The upstream stream ended before the message was complete.', 'upstream_error'));
    },
  };
}
