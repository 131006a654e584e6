import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** One server-sent event as relayed: its name, `retry`, data lines, and whether it held only comments. */
interface SseEvent {
  event: string | null;
  retry: string | null;
  data: string[];
  comment: boolean;
}

/** A JSON-RPC message as relayed (an object; anything else is passed on untouched). */
export type RelayedMessage = Record<string, unknown>;

export interface RelayOptions {
  /** Whether a message is the answer the stream was opened for (a response with the request's id). */
  isAnswer(message: RelayedMessage): boolean;
  /** Each message, before it goes on: the message to send (changed or not), or null to drop it. */
  onMessage(message: RelayedMessage, answer: boolean): RelayedMessage | null | Promise<RelayedMessage | null>;
  /** `performance.now()` by which the answer must have arrived; null: no deadline. */
  deadline: number | null;
  /** The message to send instead of the answer when the deadline passes, the stream ends or breaks first, or an event outgrows `maxEventBytes` (null: none). */
  onFailure(kind: 'timeout' | 'ended' | 'oversized'): RelayedMessage | null;
  /** Largest event held while it arrives (a line without its end counts), in characters: an upstream cannot grow the gateway's memory without bound. */
  maxEventBytes: number;
}

const TIMEOUT = Symbol('timeout');

/**
 * Relays an upstream MCP event stream to the client, message by message:
 * each event's JSON-RPC message goes through `onMessage` (the answer can be
 * filtered or checked before it goes out; progress notifications and
 * requests pass as they come). Event ids are dropped on purpose: a client
 * cannot resume with `Last-Event-ID` and receive an answer replayed past
 * the allow-list and the guardrails; it sends its request again instead.
 * The answer must come before `deadline`; if it does not, or the stream ends
 * or breaks off first, `onFailure` supplies the error to send, and the
 * upstream stream is closed. Backpressure is kept: the upstream is read only
 * as fast as the client takes the events.
 */
export function relayEvents(upstream: Readable, options: RelayOptions): Readable {
  const out = Readable.from(relay(upstream, options), { objectMode: false });
  // A client that leaves while the relay waits on the upstream: release the upstream now (the generator's
  // own clean-up runs only once that wait ends).
  out.once('close', () => {
    if (!upstream.destroyed) upstream.destroy();
  });
  return out;
}

async function* relay(upstream: Readable, options: RelayOptions): AsyncGenerator<Buffer> {
  const decoder = new StringDecoder('utf8');
  const iterator = upstream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let answered = false;
  let pendingLine = '';
  let current: SseEvent = blank();
  let held = 0;
  let timer: NodeJS.Timeout | null = null;

  /** The text of the completed events in `text`, each through `onMessage`. */
  const feed = async (text: string, end: boolean): Promise<string> => {
    let out = '';
    const lines = (pendingLine + text).split(/\r\n|\r|\n/);
    // The last piece is a partial line (or '' after a final line break), unless the stream ended.
    pendingLine = end ? '' : lines.pop()!;
    if (end && lines.at(-1) !== '') lines.push('');
    for (const line of lines) {
      if (line !== '') {
        field(current, line);
        held += line.length;
        continue;
      }
      const event = current;
      current = blank();
      held = 0;
      if (event.data.length === 0) {
        if (event.comment) out += ':\n\n'; // a keep-alive: keep the client's connection busy too
        continue;
      }
      out += await relayed(event);
    }
    return out;
  };

  const relayed = async (event: SseEvent): Promise<string> => {
    const data = event.data.join('\n');
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return serialize(event, data);
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) return serialize(event, data);
    const answer = !answered && options.isAnswer(message as RelayedMessage);
    if (answer) answered = true;
    const next = await options.onMessage(message as RelayedMessage, answer);
    return next === null ? '' : serialize(event, JSON.stringify(next));
  };

  const failure = (kind: 'timeout' | 'ended' | 'oversized'): Buffer | null => {
    if (answered) return null;
    answered = true;
    const message = options.onFailure(kind);
    return message === null ? null : Buffer.from(serialize(blank(), JSON.stringify(message)));
  };

  try {
    for (;;) {
      let next: IteratorResult<Buffer> | typeof TIMEOUT;
      try {
        if (options.deadline === null || answered) {
          next = await iterator.next();
        } else {
          const wait = Math.max(0, options.deadline - performance.now());
          next = await Promise.race([
            iterator.next(),
            new Promise<typeof TIMEOUT>((resolve) => {
              timer = setTimeout(() => resolve(TIMEOUT), wait);
            }),
          ]);
          clearTimeout(timer!);
        }
      } catch {
        // The upstream broke off: the client gets an error for its request instead of a cut stream.
        const err = failure('ended');
        if (err !== null) yield err;
        return;
      }
      if (next === TIMEOUT) {
        const err = failure('timeout');
        if (err !== null) yield err;
        return;
      }
      if (next.done) {
        const rest = await feed(decoder.end(), true);
        if (rest !== '') yield Buffer.from(rest);
        const err = failure('ended');
        if (err !== null) yield err;
        return;
      }
      const out = await feed(decoder.write(next.value), false);
      if (out !== '') yield Buffer.from(out);
      if (held + pendingLine.length > options.maxEventBytes) {
        const err = failure('oversized');
        if (err !== null) yield err;
        return;
      }
    }
  } finally {
    if (timer !== null) clearTimeout(timer);
    // Whatever ended the relay (its end, a timeout, the client leaving), the upstream stream is released.
    if (!upstream.destroyed) upstream.destroy();
  }
}

function blank(): SseEvent {
  return { event: null, retry: null, data: [], comment: false };
}

function field(event: SseEvent, line: string): void {
  if (line.charCodeAt(0) === 58 /* : */) {
    event.comment = true;
    return;
  }
  const colon = line.indexOf(':');
  const name = colon === -1 ? line : line.slice(0, colon);
  let value = colon === -1 ? '' : line.slice(colon + 1);
  if (value.charCodeAt(0) === 32) value = value.slice(1);
  if (name === 'data') event.data.push(value);
  else if (name === 'event') event.event = value;
  else if (name === 'retry' && /^\d+$/.test(value)) event.retry = value;
  // `id` is dropped: see relayEvents.
}

function serialize(event: SseEvent, data: string): string {
  let out = '';
  if (event.event !== null) out += `event: ${event.event}\n`;
  if (event.retry !== null) out += `retry: ${event.retry}\n`;
  for (const line of data.split('\n')) out += `data: ${line}\n`;
  return `${out}\n`;
}
