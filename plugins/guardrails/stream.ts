import { Transform } from 'node:stream';
import { isObject, SSEParser, type SSEEvent } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/**
 * How a front door's event stream carries text and ends: which events add
 * answer text, which one closes the stream (held back until the output
 * checks ran), and how a denial is told in-band.
 */
export interface StreamFormat {
  /** The answer text an event adds ('' for none). */
  text(event: SSEEvent, data: Json): string;
  /** Whether this event is the one that closes the stream. */
  isEnd(event: SSEEvent): boolean;
  /** The SSE text of a denial, sent before the held closing event. */
  denial(body: Json): string;
}

/** Chat and text completions: `data:` chunks, ending with `[DONE]`. */
export const CHAT_STREAM: StreamFormat = {
  text(_event, data) {
    let text = '';
    for (const choice of Array.isArray(data.choices) ? (data.choices as Json[]) : []) {
      const piece = (isObject(choice.delta) ? choice.delta.content : undefined) ?? choice.text;
      if (typeof piece === 'string') text += piece;
    }
    return text;
  },
  isEnd: (event) => event.data === '[DONE]',
  denial: (body) => `data: ${JSON.stringify(body)}\n\n`,
};

/** The Responses API: text deltas, ending with `response.completed` (or incomplete / failed). */
export const RESPONSES_STREAM: StreamFormat = {
  text: (_event, data) => (data.type === 'response.output_text.delta' && typeof data.delta === 'string' ? data.delta : ''),
  isEnd: (event) => event.event === 'response.completed' || event.event === 'response.incomplete' || event.event === 'response.failed',
  denial: (body) => {
    const error = isObject(body.error) ? body.error : {};
    return `event: error\ndata: ${JSON.stringify({ type: 'error', code: error.code ?? null, message: error.message ?? '', param: null, hook_results: body.hook_results })}\n\n`;
  },
};

/** Anthropic's Messages API: text deltas, ending with `message_stop`. */
export const MESSAGES_STREAM: StreamFormat = {
  text: (_event, data) => (data.type === 'content_block_delta' && isObject(data.delta) && data.delta.type === 'text_delta' && typeof data.delta.text === 'string' ? data.delta.text : ''),
  isEnd: (event) => event.event === 'message_stop',
  denial: (body) => {
    const error = isObject(body.error) ? body.error : {};
    return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: error.type ?? 'guardrail_error', message: error.message ?? '' }, hook_results: body.hook_results })}\n\n`;
  },
};

/** The stream format of a route's answers. */
export function streamFormatOf(route: string): StreamFormat {
  return route === 'responses' ? RESPONSES_STREAM : route === 'messages' ? MESSAGES_STREAM : CHAT_STREAM;
}

/** An event as it came (its name kept), for passing it on. */
const serialize = (event: SSEEvent): string => `${event.event === null ? '' : `event: ${event.event}\n`}data: ${event.data}\n\n`;

/**
 * Wraps an SSE answer so output checks can run on its assembled text. Every
 * event passes through as it arrives except the one that closes the stream,
 * which is held until `atEnd` has run on the text: a stream cannot be
 * un-sent, so all a failed check can still do is add an event (the denial,
 * in the stream's own format) before the end.
 */
export function guardStream(atEnd: (text: string) => Promise<Json | null>, format: StreamFormat = CHAT_STREAM): Transform {
  const parser = new SSEParser();
  let text = '';
  let held: SSEEvent | null = null;
  const emit = (event: SSEEvent): string => {
    if (format.isEnd(event)) {
      held ??= event;
      return '';
    }
    if (event.data.charCodeAt(0) === 123 /* { */) {
      try {
        text += format.text(event, JSON.parse(event.data) as Json);
      } catch {
        /* not JSON: passed through untouched */
      }
    }
    return serialize(event);
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      let out = '';
      for (const e of parser.push(chunk.toString('utf8'))) out += emit(e);
      done(null, out === '' ? undefined : out);
    },
    flush(done) {
      let out = '';
      for (const e of parser.end()) out += emit(e);
      atEnd(text).then(
        (denial) => done(null, out + (denial === null ? '' : format.denial(denial)) + (held === null ? (format === CHAT_STREAM ? 'data: [DONE]\n\n' : '') : serialize(held))),
        (err: Error) => done(err),
      );
    },
  });
}
