import { StringDecoder } from 'node:string_decoder';
import { ChatChunkWriter, type FinishReason, type OpenAIUsage } from '../openai/chunks.js';
import { SSEParser } from '../sse.js';
import type { StreamTranslator } from '../openai/translate.js';
import { isObject, type Json } from './parts.js';
import { geminiFinish, geminiUsage, toolCallId } from './translate.js';

/** What {@link geminiStreamTranslator} needs to turn Gemini's stream into chat completion chunks. */
export interface GeminiStreamOptions {
  /** The requested model; replaced by the first `modelVersion` seen before any chunk went out. */
  model: string;
  /** The client asked for the usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** When false, `thought` parts are sent as `reasoning_content` deltas; when true they are dropped. */
  strict: boolean;
  /** Called once at the end with the last `usageMetadata` seen (for the log), whether or not the client asked for it. */
  onUsage?: (usage: OpenAIUsage) => void;
  /** Fixed id and created (tests); default a fresh id and now. */
  id?: string;
  /** The chunks' `created` (unix seconds); see `id`. */
  created?: number;
}

/**
 * Translates `streamGenerateContent?alt=sse` into `chat.completion.chunk`
 * events. Each SSE event carries a whole `GenerateContentResponse` holding
 * only the new parts; events are separated by `\r\n\r\n` (any SSE line end is
 * accepted, however the bytes are cut, multi-byte characters included).
 * Only candidate 0 is streamed (n > 1 is refused for streams). A function
 * call arrives whole and goes out as a start chunk plus one argument
 * fragment. An `{"error":…}` event becomes an in-band error event and
 * `[DONE]`; whatever follows it is ignored.
 */
export function geminiStreamTranslator(options: GeminiStreamOptions): StreamTranslator {
  const writer = new ChatChunkWriter({ id: options.id, created: options.created, model: options.model, includeUsage: options.includeUsage });
  const parser = new SSEParser();
  const decoder = new StringDecoder('utf8');
  let started = false;
  let closed = false;
  let calls = 0;
  let finish: FinishReason | null = null;
  let usage: OpenAIUsage | null = null;

  const reportUsage = () => {
    if (usage !== null) options.onUsage?.(usage);
  };

  const onEvent = (data: string): string => {
    if (closed || data.trim() === '') return '';
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      closed = true;
      return writer.error('The provider sent a stream event that is not JSON.', 'upstream_error') + writer.done();
    }
    if (!isObject(event)) return '';
    if (isObject(event.error)) {
      closed = true;
      reportUsage();
      const e = event.error;
      const message = typeof e.message === 'string' ? e.message : 'The provider reported an error mid-stream.';
      const type = typeof e.status === 'string' ? e.status : 'upstream_error';
      return writer.error(message, type, e.code === undefined || e.code === null ? null : String(e.code)) + writer.done();
    }
    if (!started && typeof event.modelVersion === 'string' && event.modelVersion !== '') writer.model = event.modelVersion;
    started = true;
    let out = writer.role();
    const u = geminiUsage(event.usageMetadata);
    if (u !== null) usage = u;
    const candidates = Array.isArray(event.candidates) ? event.candidates.filter(isObject) : [];
    const candidate = candidates.find((c) => (c.index ?? 0) === 0);
    if (candidate === undefined) {
      if (isObject(event.promptFeedback) && typeof event.promptFeedback.blockReason === 'string' && finish === null) {
        finish = 'content_filter';
        out += writer.finish(finish);
      }
      return out;
    }
    const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObject) : [];
    for (const p of parts) out += part(p);
    const reason = geminiFinish(candidate.finishReason, calls > 0);
    if (reason !== null && finish === null) {
      finish = reason;
      out += writer.finish(reason);
    }
    return out;
  };

  const part = (p: Json): string => {
    if (typeof p.text === 'string') {
      if (p.thought === true) return options.strict ? '' : writer.reasoning(p.text);
      return writer.text(p.text);
    }
    if (isObject(p.functionCall)) {
      const fc = p.functionCall;
      const k = calls++;
      const id = typeof fc.id === 'string' && fc.id !== '' ? fc.id : toolCallId(writer.id, k);
      return writer.toolStart(k, id, String(fc.name ?? '')) + writer.toolArgs(k, JSON.stringify(fc.args ?? {}));
    }
    return '';
  };

  const run = (events: { data: string }[]): string => {
    let out = '';
    for (const e of events) out += onEvent(e.data);
    return out;
  };

  return {
    push(chunk: Buffer): string {
      if (closed) return '';
      return run(parser.push(decoder.write(chunk)));
    },
    end(): string {
      if (closed) return '';
      let out = run(parser.push(decoder.end()));
      out += run(parser.end());
      if (closed) return out;
      closed = true;
      out += writer.role();
      if (finish === null) out += writer.finish(calls > 0 ? 'tool_calls' : 'stop');
      reportUsage();
      if (usage !== null) out += writer.usage(usage);
      return out + writer.done();
    },
  };
}
