import type { GatewayError } from '../../core/index.js';
import { anthropicErrorBody, errorTypeForStatus } from '../anthropic/to-message.js';
import { isObject } from '../json-object.js';
import type { SSEEvent } from '../sse.js';

type Json = Record<string, unknown>;

/**
 * How one front door's event stream carries answer text and ends, for a
 * stream the gateway watches (stream control): which events add text, how an
 * event is rewritten with other text (redaction), which event closes the
 * stream, and the terminal error that ends it early in the door's own format.
 * One object per stream: a door may remember what its terminal error needs
 * (a Responses stream's response id and sequence numbers).
 */
export interface DoorStream {
  /** The answer text an event adds ('' for none); also where the door notes its state. Throws on an event that is not JSON. */
  text(event: SSEEvent): string;
  /** The event, serialized, with its text replaced by `text`. */
  rewrite(event: SSEEvent, text: string): string;
  /** Whether this event closes the stream (`[DONE]`, `response.completed`, `message_stop`). */
  isEnd(event: SSEEvent): boolean;
  /** What to send when the stream ended without its closing event ('' for nothing). */
  missingEnd(): string;
  /**
   * The events that end the stream with `error` instead of its closing event: an error chunk and
   * `[DONE]` (chat and text completions), `error` and `response.failed` (Responses), `event: error`
   * (Messages). `extra` is merged into the error event's data (a guardrail's `hook_results`).
   */
  terminal(error: GatewayError, extra?: Json): string;
}

/** An event as it came (its name kept; multi-line data as several `data:` lines). */
export function serializeEvent(event: SSEEvent): string {
  const data = event.data.indexOf('\n') === -1 ? event.data : event.data.replaceAll('\n', '\ndata: ');
  return event.event === null ? `data: ${data}\n\n` : `event: ${event.event}\ndata: ${data}\n\n`;
}

const eventOf = (event: SSEEvent, data: Json): string => serializeEvent({ event: event.event, data: JSON.stringify(data) });

/**
 * The string value after the one `marker` (`"content":"`, its opening quote included) in an event's
 * JSON, read without parsing the whole event (every text event goes through here): null when the
 * marker is absent, undefined when it is there more than once or the string does not end (the caller
 * parses the event whole). A key's quotes inside a string value are escaped, so a match is a key.
 */
export function onlyString(data: string, marker: string): string | null | undefined {
  const at = data.indexOf(marker);
  if (at === -1) return null;
  if (data.indexOf(marker, at + marker.length) !== -1) return undefined;
  const start = at + marker.length;
  // The closing quote: the first one not escaped (an odd run of backslashes before it escapes it). Found with the
  // engine's own search, as every text event of a stream comes through here.
  let end = data.indexOf('"', start);
  while (end !== -1) {
    let slashes = 0;
    while (data.charCodeAt(end - 1 - slashes) === 92 /* \\ */) slashes++;
    if (slashes % 2 === 0) break;
    end = data.indexOf('"', end + 1);
  }
  if (end === -1) return undefined;
  const raw = data.slice(start, end);
  return raw.indexOf('\\') === -1 ? raw : (JSON.parse(`"${raw}"`) as string);
}

/** Chat and text completions: `data:` chunks whose choices carry `delta.content` (chat) or `text` (completions), then `[DONE]`. */
function chatStream(): DoorStream {
  return {
    text(event) {
      const raw = event.data;
      if (raw.charCodeAt(0) !== 123 /* { */) return '';
      // One choice's `delta.content` (chat) or `text` (completions): read where it is; anything else parsed whole.
      const content = onlyString(raw, '"content":"');
      if (content !== undefined && (content !== null || raw.indexOf('"text":"') === -1)) return content ?? '';
      if (content === null) {
        const text = onlyString(raw, '"text":"');
        if (text !== undefined) return text ?? '';
      }
      const data = JSON.parse(raw) as Json;
      const choices = data.choices;
      if (!Array.isArray(choices)) return '';
      let text = '';
      for (const choice of choices as Json[]) {
        const piece = isObject(choice.delta) ? choice.delta.content : choice.text;
        if (typeof piece === 'string') text += piece;
      }
      return text;
    },
    rewrite(event, text) {
      const data = JSON.parse(event.data) as Json;
      // The whole event's text goes to its first text-bearing choice (n > 1 streams interleave choices; each event
      // usually carries one).
      let first = true;
      const choices = (data.choices as Json[]).map((choice) => {
        const delta = isObject(choice.delta) ? choice.delta : null;
        const piece = delta !== null ? delta.content : choice.text;
        if (typeof piece !== 'string') return choice;
        const value = first ? text : '';
        first = false;
        return delta !== null ? { ...choice, delta: { ...delta, content: value } } : { ...choice, text: value };
      });
      return eventOf(event, { ...data, choices });
    },
    isEnd: (event) => event.data === '[DONE]',
    missingEnd: () => 'data: [DONE]\n\n',
    terminal: (error, extra) => `data: ${JSON.stringify({ ...error.toEnvelope(), ...extra })}\n\ndata: [DONE]\n\n`,
  };
}

/** Responses events that carry the response snapshot a `response.failed` repeats. */
const SNAPSHOTS = new Set(['response.created', 'response.in_progress', 'response.queued']);

/** The Responses API: `response.output_text.delta` text, closed by `response.completed` (or incomplete / failed). */
function responsesStream(): DoorStream {
  let snapshot: Json | null = null;
  let sequence = -1;
  const next = () => ++sequence;
  return {
    text(event) {
      const name = event.event;
      if (name === 'response.output_text.delta') {
        sequence++;
        const delta = onlyString(event.data, '"delta":"');
        if (delta !== undefined) return delta ?? '';
        const data = JSON.parse(event.data) as Json;
        if (typeof data.sequence_number === 'number') sequence = data.sequence_number;
        return typeof data.delta === 'string' ? data.delta : '';
      }
      if (name !== null && SNAPSHOTS.has(name)) {
        const data = JSON.parse(event.data) as Json;
        if (typeof data.sequence_number === 'number') sequence = data.sequence_number;
        if (isObject(data.response)) snapshot = data.response;
      } else if (name !== null && name.startsWith('response.')) {
        sequence++;
      }
      return '';
    },
    rewrite: (event, text) => eventOf(event, { ...(JSON.parse(event.data) as Json), delta: text }),
    isEnd: (event) => event.event === 'response.completed' || event.event === 'response.incomplete' || event.event === 'response.failed',
    missingEnd: () => '',
    terminal(error, extra) {
      const detail = { type: error.type, code: error.code, message: error.message, param: error.param };
      // The schema's error event has code and message at the top; the official SDKs raise an event's `error` object
      // as a typed APIError, so it is there too.
      const failure = `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: next(), code: error.code, message: error.message, param: error.param, error: detail, ...extra })}\n\n`;
      if (snapshot === null) return failure;
      const response = { ...snapshot, status: 'failed', error: { code: error.code, message: error.message } };
      return failure + `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: next(), response })}\n\n`;
    },
  };
}

/** Anthropic's error types a gateway error keeps as it is; others go by status. */
const ANTHROPIC_TYPES = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'rate_limit_error', 'api_error', 'overloaded_error', 'guardrail_error']);

/** Anthropic's Messages API: `text_delta` text, closed by `message_stop`. */
function messagesStream(): DoorStream {
  return {
    text(event) {
      if (event.event !== 'content_block_delta' || event.data.indexOf('"text_delta"') === -1) return '';
      const text = onlyString(event.data, '"text":"');
      if (text !== undefined) return text ?? '';
      const data = JSON.parse(event.data) as Json;
      return isObject(data.delta) && data.delta.type === 'text_delta' && typeof data.delta.text === 'string' ? data.delta.text : '';
    },
    rewrite(event, text) {
      const data = JSON.parse(event.data) as Json;
      return eventOf(event, { ...data, delta: { ...(data.delta as Json), text } });
    },
    isEnd: (event) => event.event === 'message_stop',
    missingEnd: () => '',
    terminal(error, extra) {
      const type = ANTHROPIC_TYPES.has(error.type) ? error.type : errorTypeForStatus(error.status);
      return `event: error\ndata: ${JSON.stringify({ ...anthropicErrorBody(error.status, error.message, type), ...extra })}\n\n`;
    },
  };
}

/** The stream format of a route's answers, as the route's clients read them (route API names: `responses`, `messages`, others chat-shaped). */
export function doorStreamOf(route: string): DoorStream {
  return route === 'responses' ? responsesStream() : route === 'messages' ? messagesStream() : chatStream();
}
