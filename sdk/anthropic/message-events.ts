import type { DoorStreamTranslator } from '../door-stream.js';
import { toolCallDeltas } from '../openai/tool-deltas.js';
import { SSEParser } from '../sse.js';
import { errorTypeForStatus, messageId, messagesUsage, parseInput, stopReason } from './to-message.js';
import { isObject } from '../json-object.js';

/**
 * Anthropic's Messages event stream written by the gateway: for answers
 * translated from chat completions, and for cached answers replayed. The
 * event grammar is Anthropic's (shared/providers/anthropic.md §4):
 * `message_start`, a `ping`, per block `content_block_start`, its deltas
 * (`text_delta`, `input_json_delta`) and `content_block_stop`, then
 * `message_delta` (stop reason and the whole usage) and `message_stop`.
 */

type Json = Record<string, unknown>;

const event = (data: Json & { type: string }): string => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

/** One message's events, with the blocks opened and closed in order. */
export class MessageEventWriter {
  #index = -1;
  #open: 'text' | 'tool_use' | null = null;
  /** Chat tool-call index → block index. */
  readonly #tools = new Map<number, number>();
  #finished = false;

  /**
   * Starts a message's events; nothing is written until {@link MessageEventWriter.start}.
   *
   * @param id - The message id the events carry (`msg_…`, see `messageId`).
   * @param model - The model named in `message_start`; may be set later, before `start`.
   */
  constructor(
    readonly id: string,
    public model: string,
  ) {}

  /** Whether the message was finished or failed: every later call writes nothing. */
  get finished(): boolean {
    return this.#finished;
  }

  /** `message_start` (empty content, no stop reason, usage to come) and a `ping`. */
  start(usage: Json = { input_tokens: 0, output_tokens: 0 }): string {
    return (
      event({ type: 'message_start', message: { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage } }) +
      event({ type: 'ping' })
    );
  }

  #close(): string {
    if (this.#open === null) return '';
    this.#open = null;
    return event({ type: 'content_block_stop', index: this.#index });
  }

  /** A text fragment: opens a text block when none is open (closing a tool block), then its `text_delta`. */
  text(delta: string): string {
    if (delta === '') return '';
    let out = '';
    if (this.#open !== 'text') {
      out += this.#close();
      this.#index++;
      this.#open = 'text';
      out += event({ type: 'content_block_start', index: this.#index, content_block: { type: 'text', text: '' } });
    }
    return out + event({ type: 'content_block_delta', index: this.#index, delta: { type: 'text_delta', text: delta } });
  }

  /** A tool call starts (`key`: its chat index); its input follows as JSON fragments. */
  toolStart(key: number, id: string, name: string): string {
    if (this.#tools.has(key)) return '';
    const out = this.#close();
    this.#index++;
    this.#open = 'tool_use';
    this.#tools.set(key, this.#index);
    return out + event({ type: 'content_block_start', index: this.#index, content_block: { type: 'tool_use', id, name, input: {} } });
  }

  /** A fragment of a tool call's input JSON (`key`: its chat index), as an `input_json_delta`; nothing for an unknown key. */
  toolInput(key: number, fragment: string): string {
    const index = this.#tools.get(key);
    if (index === undefined || fragment === '') return '';
    // Anthropic's blocks do not interleave: a fragment for an earlier block is sent on that block's index all the same.
    return event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: fragment } });
  }

  /** Closes the open block, then `message_delta` (stop reason, usage) and `message_stop`. */
  finish(stop: string, usage: Json): string {
    if (this.#finished) return '';
    this.#finished = true;
    return this.#close() + event({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage }) + event({ type: 'message_stop' });
  }

  /** An in-band `error` event (Anthropic's shape); the stream ends there. */
  fail(type: string, message: string): string {
    if (this.#finished) return '';
    this.#finished = true;
    return event({ type: 'error', error: { type, message } });
  }
}

/**
 * A chat completions SSE stream → Anthropic's Messages events, as it flows.
 * The chat usage chunk (always asked for by the door) becomes the usage of
 * `message_delta`; an in-band error event becomes Anthropic's `error` event.
 */
export function chatToMessagesStream(model: string): DoorStreamTranslator {
  const writer = new MessageEventWriter(messageId(), model);
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  let finish: unknown = null;
  let usage: unknown = null;
  let started = false;

  const handle = (data: string): string => {
    if (writer.finished || data === '') return '';
    if (data === '[DONE]') return finish === null ? '' : writer.finish(stopReason(finish), messagesUsage(usage));
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return writer.fail('api_error', 'The upstream sent a stream event that is not JSON.');
    }
    if (!isObject(chunk)) return '';
    if (isObject(chunk.error)) {
      const e = chunk.error;
      const type = typeof e.type === 'string' && e.type !== '' ? e.type : errorTypeForStatus(500);
      return writer.fail(type, typeof e.message === 'string' && e.message !== '' ? e.message : 'The upstream stream failed.');
    }
    if (!started && typeof chunk.model === 'string' && chunk.model !== '') writer.model = chunk.model;
    if (isObject(chunk.usage)) usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? (chunk.choices as unknown[]).find((c) => isObject(c) && (c.index ?? 0) === 0) : undefined;
    if (!isObject(choice)) return '';
    let out = '';
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string') out += writer.text(delta.content);
    if (typeof delta.refusal === 'string') out += writer.text(delta.refusal);
    out += toolCallDeltas(delta, 'toolu_', (key, id, name) => writer.toolStart(key, id, name), (key, text) => writer.toolInput(key, text));
    if (typeof choice.finish_reason === 'string') finish = choice.finish_reason;
    return out;
  };

  const run = (text: string, last: boolean): string => parser.map(text, last, handle);

  return {
    start() {
      started = true;
      return writer.start();
    },
    push: (chunk) => (writer.finished ? '' : run(decoder.decode(chunk, { stream: true }), false)),
    end() {
      if (writer.finished) return '';
      const out = run(decoder.decode(), true);
      if (writer.finished) return out;
      return out + (finish !== null ? writer.finish(stopReason(finish), messagesUsage(usage)) : writer.fail('api_error', 'The upstream stream ended before the message was complete.'));
    },
    fail: (message) => writer.fail('api_error', message),
  };
}

/** A complete message replayed as its event stream (a cached answer asked for with `stream: true`). */
export function replayMessage(message: Json): string {
  const w = new MessageEventWriter(String(message.id), String(message.model ?? ''));
  const usage = isObject(message.usage) ? message.usage : {};
  let out = w.start({ ...usage, output_tokens: 0 });
  let key = 0;
  for (const block of Array.isArray(message.content) ? (message.content as Json[]) : []) {
    if (block.type === 'text' && typeof block.text === 'string') out += w.text(block.text);
    else if (block.type === 'tool_use') {
      out += w.toolStart(key, String(block.id), String(block.name));
      out += w.toolInput(key++, JSON.stringify(block.input ?? {}));
    }
  }
  return out + w.finish(String(message.stop_reason ?? 'end_turn'), usage);
}

/**
 * Anthropic's Messages events → the one `message` they describe (blocks
 * assembled, tool inputs parsed, stop reason and usage merged), or null when
 * the stream carried an error or did not reach `message_stop`.
 */
export function assembleMessage(text: string): Json | null {
  const parser = new SSEParser();
  const events = [...parser.push(text), ...parser.end()];
  let message: Json | null = null;
  const blocks: Json[] = [];
  const inputs = new Map<number, string>();
  let stopped = false;
  for (const e of events) {
    let data: Json;
    try {
      data = JSON.parse(e.data) as Json;
    } catch {
      continue;
    }
    switch (data.type) {
      case 'message_start':
        message = isObject(data.message) ? { ...data.message } : null;
        break;
      case 'content_block_start':
        if (typeof data.index === 'number' && isObject(data.content_block)) blocks[data.index] = { ...data.content_block };
        break;
      case 'content_block_delta': {
        const block = typeof data.index === 'number' ? blocks[data.index] : undefined;
        const delta = isObject(data.delta) ? data.delta : {};
        if (block === undefined) return null;
        if (delta.type === 'text_delta') block.text = String(block.text ?? '') + String(delta.text ?? '');
        else if (delta.type === 'input_json_delta') inputs.set(data.index as number, (inputs.get(data.index as number) ?? '') + String(delta.partial_json ?? ''));
        else if (delta.type === 'thinking_delta') block.thinking = String(block.thinking ?? '') + String(delta.thinking ?? '');
        else if (delta.type === 'signature_delta') block.signature = String(delta.signature ?? '');
        break;
      }
      case 'message_delta':
        if (message === null) return null;
        if (isObject(data.delta)) Object.assign(message, { stop_reason: data.delta.stop_reason ?? null, stop_sequence: data.delta.stop_sequence ?? null });
        if (isObject(data.usage)) message.usage = { ...(isObject(message.usage) ? message.usage : {}), ...data.usage };
        break;
      case 'message_stop':
        stopped = true;
        break;
      case 'error':
        return null;
      default:
        break;
    }
  }
  if (message === null || !stopped) return null;
  for (const [index, json] of inputs) if (blocks[index] !== undefined) blocks[index]!.input = parseInput(json);
  message.content = blocks.filter((b) => b !== undefined);
  return message;
}
