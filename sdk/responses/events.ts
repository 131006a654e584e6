import { responseItemId } from './ids.js';

/**
 * Writes the Responses API event stream (`event:` name and `data:` JSON with
 * the same `type` and a `sequence_number` from 0), keeping the response
 * object it describes: items are opened, filled by deltas and closed with
 * their `…done` events, in output order, so a client that accumulates the
 * events (the official SDKs do) ends with the same object `response.completed` carries.
 */

type Json = Record<string, unknown>;

interface OpenPart {
  /** `output_text`, `refusal` or `reasoning_text`. */
  type: string;
  text: string;
  logprobs: Json[];
}

interface OpenItem {
  index: number;
  item: Json;
  parts: OpenPart[];
}

/** Part type → the names of its delta and done events, and the field the text goes in. */
const PARTS: Readonly<Record<string, { delta: string; done: string; field: string }>> = Object.freeze({
  output_text: { delta: 'response.output_text.delta', done: 'response.output_text.done', field: 'text' },
  refusal: { delta: 'response.refusal.delta', done: 'response.refusal.done', field: 'refusal' },
  reasoning_text: { delta: 'response.reasoning_text.delta', done: 'response.reasoning_text.done', field: 'text' },
});

/** One response's event stream. `response` is the object as described so far. */
export class ResponseEventWriter {
  /** The response object as described so far: its output grows with each item, its status and usage are set at the end. */
  readonly response: Json;
  #sequence = 0;
  #message: OpenItem | null = null;
  #reasoning: OpenItem | null = null;
  /** Open function calls by the key the caller uses (a chat tool-call index). */
  readonly #calls = new Map<number, OpenItem>();
  #finished = false;
  #nextId: string | null = null;

  /** `shell`: the response object with no output (see `responseShell`). */
  constructor(shell: Json) {
    this.response = shell;
  }

  /** The next sequence number (how many events went out). */
  get sequence(): number {
    return this.#sequence;
  }

  /** Whether the terminal event (`response.completed`, `response.incomplete` or `response.failed`) went out: later calls write nothing. */
  get finished(): boolean {
    return this.#finished;
  }

  /** One SSE event of `type` with `data`, numbered with the next `sequence_number`. */
  event(type: string, data: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.#sequence++, ...data })}\n\n`;
  }

  /** `response.created` and `response.in_progress`, with the object as it stands (no output yet). */
  start(): string {
    const snapshot = { ...this.response, status: 'in_progress' };
    return this.event('response.created', { response: snapshot }) + this.event('response.in_progress', { response: snapshot });
  }

  #output(): Json[] {
    return this.response.output as Json[];
  }

  /** The id the next item opened takes instead of a new one (a replay keeps the stored ids). */
  nextItemId(id: string): void {
    this.#nextId = id;
  }

  #open(item: Json): { open: OpenItem; text: string } {
    if (this.#nextId !== null) {
      item.id = this.#nextId;
      this.#nextId = null;
    }
    const output = this.#output();
    const open: OpenItem = { index: output.length, item, parts: [] };
    output.push(item);
    return { open, text: this.event('response.output_item.added', { output_index: open.index, item: structuredClone(item) }) };
  }

  #addPart(open: OpenItem, type: string): string {
    const part: OpenPart = { type, text: '', logprobs: [] };
    open.parts.push(part);
    return this.event('response.content_part.added', { item_id: open.item.id, output_index: open.index, content_index: open.parts.length - 1, part: this.#partJson(part) });
  }

  #partJson(part: OpenPart): Json {
    if (part.type === 'output_text') return { type: 'output_text', text: part.text, annotations: [], logprobs: part.logprobs };
    if (part.type === 'refusal') return { type: 'refusal', refusal: part.text };
    return { type: part.type, text: part.text };
  }

  /** Text for a message (`output_text`) or a refusal; opens the message and the part as needed. */
  text(delta: string, type: 'output_text' | 'refusal' = 'output_text', logprobs: Json[] = []): string {
    if (delta === '') return '';
    let out = this.#closeReasoning() + this.#closeCalls();
    if (this.#message === null) {
      const { open, text } = this.#open({ id: responseItemId('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [] });
      this.#message = open;
      out += text;
    }
    const message = this.#message;
    let part = message.parts.at(-1);
    if (part === undefined || part.type !== type) {
      out += this.#addPart(message, type);
      part = message.parts.at(-1)!;
    }
    part.text += delta;
    if (logprobs.length > 0) part.logprobs.push(...logprobs);
    const spec = PARTS[type]!;
    const data: Json = { item_id: message.item.id, output_index: message.index, content_index: message.parts.length - 1, delta };
    if (type === 'output_text') data.logprobs = logprobs;
    return out + this.event(spec.delta, data);
  }

  /** Reasoning text (a model's visible thinking, where the target passes it on). */
  reasoning(delta: string): string {
    if (delta === '') return '';
    let out = '';
    if (this.#reasoning === null) {
      out += this.#closeMessage() + this.#closeCalls();
      const { open, text } = this.#open({ id: responseItemId('rs'), type: 'reasoning', summary: [], content: [] });
      this.#reasoning = open;
      out += text + this.#addPart(open, 'reasoning_text');
    }
    const open = this.#reasoning;
    open.parts[0]!.text += delta;
    return out + this.event('response.reasoning_text.delta', { item_id: open.item.id, output_index: open.index, content_index: 0, delta });
  }

  /** A function call starts: its item with the call id and name (arguments follow). `key` names it for {@link callArguments}. */
  callStart(key: number, callId: string, name: string): string {
    if (this.#calls.has(key)) return '';
    const out = this.#closeMessage() + this.#closeReasoning();
    const { open, text } = this.#open({ id: responseItemId('fc'), type: 'function_call', status: 'in_progress', call_id: callId, name, arguments: '' });
    this.#calls.set(key, open);
    return out + text;
  }

  /** A fragment of a function call's arguments (JSON text). */
  callArguments(key: number, delta: string): string {
    const open = this.#calls.get(key);
    if (open === undefined || delta === '') return '';
    open.item.arguments = String(open.item.arguments) + delta;
    return this.event('response.function_call_arguments.delta', { item_id: open.item.id, output_index: open.index, delta });
  }

  #closeMessage(): string {
    const open = this.#message;
    if (open === null) return '';
    this.#message = null;
    let out = '';
    open.parts.forEach((part, i) => {
      const spec = PARTS[part.type]!;
      const done: Json = { item_id: open.item.id, output_index: open.index, content_index: i, [spec.field]: part.text };
      if (part.type === 'output_text') done.logprobs = part.logprobs;
      out += this.event(spec.done, done);
      out += this.event('response.content_part.done', { item_id: open.item.id, output_index: open.index, content_index: i, part: this.#partJson(part) });
    });
    open.item.content = open.parts.map((p) => this.#partJson(p));
    open.item.status = this.response.status === 'incomplete' ? 'incomplete' : 'completed';
    return out + this.event('response.output_item.done', { output_index: open.index, item: open.item });
  }

  #closeReasoning(): string {
    const open = this.#reasoning;
    if (open === null) return '';
    this.#reasoning = null;
    const part = open.parts[0]!;
    open.item.content = [{ type: 'reasoning_text', text: part.text }];
    return (
      this.event('response.reasoning_text.done', { item_id: open.item.id, output_index: open.index, content_index: 0, text: part.text }) +
      this.event('response.content_part.done', { item_id: open.item.id, output_index: open.index, content_index: 0, part: { type: 'reasoning_text', text: part.text } }) +
      this.event('response.output_item.done', { output_index: open.index, item: open.item })
    );
  }

  #closeCalls(): string {
    let out = '';
    const open = [...this.#calls.values()].sort((a, b) => a.index - b.index);
    this.#calls.clear();
    for (const call of open) {
      if (call.item.arguments === '') call.item.arguments = '{}';
      call.item.status = 'completed';
      out += this.event('response.function_call_arguments.done', { item_id: call.item.id, output_index: call.index, name: call.item.name, arguments: call.item.arguments });
      out += this.event('response.output_item.done', { output_index: call.index, item: call.item });
    }
    return out;
  }

  /**
   * Closes every open item and ends the stream with `response.completed` (or
   * `response.incomplete`, with its reason) carrying the whole object and its usage.
   */
  finish(status: 'completed' | 'incomplete', reason: string | null, usage: Json | null): string {
    if (this.#finished) return '';
    this.response.status = status;
    this.response.incomplete_details = reason === null ? null : { reason };
    const out = this.#closeReasoning() + this.#closeMessage() + this.#closeCalls();
    this.#finished = true;
    this.response.usage = usage;
    return out + this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.response });
  }

  /**
   * Ends the stream with a failure: an `error` event, then `response.failed`
   * with `status: failed` and the error (`code`, `message`). What went out before stays in the output.
   */
  fail(code: string, message: string, usage: Json | null = null): string {
    if (this.#finished) return '';
    this.#finished = true;
    this.response.status = 'failed';
    this.response.error = { code, message };
    this.response.usage = usage;
    // Items left open are cut short: they stay in the output as they are, marked incomplete.
    for (const open of [this.#message, this.#reasoning, ...this.#calls.values()]) {
      if (open === null) continue;
      open.item.status = 'incomplete';
      if (open.item.type !== 'function_call') open.item.content = open.parts.map((p) => this.#partJson(p));
    }
    this.#message = null;
    this.#reasoning = null;
    this.#calls.clear();
    return this.event('error', { code, message, param: null }) + this.event('response.failed', { response: this.response });
  }
}

/**
 * A complete response object replayed as its event stream (a cached answer
 * asked for with `stream: true`, a stored one with `GET …?stream=true`).
 */
export function replayResponse(response: Json): string {
  const shell: Json = { ...response, output: [], status: 'in_progress', usage: null, incomplete_details: null, error: null };
  const w = new ResponseEventWriter(shell);
  let out = w.start();
  const output = Array.isArray(response.output) ? (response.output as Json[]) : [];
  let key = 0;
  for (const item of output) {
    if (typeof item.id === 'string') w.nextItemId(item.id);
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as Json[]) {
        if (part.type === 'output_text' && typeof part.text === 'string') out += w.text(part.text, 'output_text', Array.isArray(part.logprobs) ? (part.logprobs as Json[]) : []);
        else if (part.type === 'refusal' && typeof part.refusal === 'string') out += w.text(part.refusal, 'refusal');
      }
    } else if (item.type === 'function_call') {
      out += w.callStart(key, String(item.call_id), String(item.name));
      out += w.callArguments(key++, typeof item.arguments === 'string' ? item.arguments : '');
    } else if (item.type === 'reasoning' && Array.isArray(item.content)) {
      for (const part of item.content as Json[]) if (typeof part.text === 'string') out += w.reasoning(part.text);
    }
  }
  if (response.status === 'failed') {
    const error = (response.error ?? {}) as Json;
    return out + w.fail(String(error.code ?? 'server_error'), String(error.message ?? 'The response failed.'), (response.usage as Json) ?? null);
  }
  const reason = (response.incomplete_details as Json | null)?.reason;
  return out + w.finish(response.status === 'incomplete' ? 'incomplete' : 'completed', typeof reason === 'string' ? reason : null, (response.usage as Json) ?? null);
}
