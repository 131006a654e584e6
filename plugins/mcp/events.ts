import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** One server-sent event as relayed: its name, id, `retry`, data lines, and whether it held only comments. */
interface SseEvent {
  event: string | null;
  id: string | null;
  retry: string | null;
  data: string[];
  comment: boolean;
}

/** Resumptions of one request's stream at most: an upstream that keeps closing without answering is given up on. */
export const MAX_RESUMES = 5;
/** Longest wait before a resumption an upstream's `retry` can ask for, in ms (the request's deadline bounds it too). */
const MAX_RETRY_WAIT_MS = 10_000;

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
  /**
   * Reopens the upstream's stream after the last event it sent with an id (a GET with `Last-Event-ID`), when the
   * stream ends or breaks before the answer: the server replays what came after (SSE polling, a dropped
   * connection), so the answer is not lost and the request is not sent twice. Null when it cannot be resumed.
   * Without it, an ended stream is a failure at once.
   */
  resume?(lastEventId: string): Promise<Readable | null>;
  /**
   * The id the client gets for an event, given the upstream's last event id at that point (never the upstream's id
   * itself: see the gateway's client ids). Called for each relayed message once the upstream has given an id;
   * without it, or before that, events go without ids.
   */
  eventId?(upstreamId: string): string;
}

const TIMEOUT = Symbol('timeout');

/**
 * Relays an upstream MCP event stream to the client, message by message:
 * each event's JSON-RPC message goes through `onMessage` (the answer can be
 * filtered or checked before it goes out; progress notifications and
 * requests pass as they come). The upstream's event ids are not sent on: a
 * client that resumed with one would get an answer replayed past the
 * allow-list and the guardrails. Given `eventId`, each event carries an id
 * of the gateway's instead, from which it resumes the upstream's stream for
 * the client itself, judging again. The gateway resumes on its own too: when the
 * upstream's stream ends or breaks before the answer and it gave an event
 * id (a priming event for SSE polling, or any event), `resume` reopens it
 * from there after the upstream's `retry`, and the answer still comes on
 * the client's one stream, checked, and the tool runs once.
 * The answer must come before `deadline`; if it does not, or the stream ends
 * or breaks off first and cannot be resumed, `onFailure` supplies the error
 * to send, and the upstream stream is closed. Backpressure is kept: the upstream is read only
 * as fast as the client takes the events.
 */
export function relayEvents(upstream: Readable, options: RelayOptions): Readable {
  const source = { current: upstream };
  const out = Readable.from(relay(source, options), { objectMode: false });
  // A client that leaves while the relay waits on the upstream: release the upstream now (the generator's
  // own clean-up runs only once that wait ends).
  out.once('close', () => {
    if (!source.current.destroyed) source.current.destroy();
  });
  return out;
}

async function* relay(source: { current: Readable }, options: RelayOptions): AsyncGenerator<Buffer> {
  let decoder = new StringDecoder('utf8');
  let iterator = source.current[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  /** The id of the last event the upstream sent with one, and the reconnection time it asked for (SSE's `retry`). */
  let lastEventId: string | null = null;
  let retryMs = 0;
  let resumes = 0;
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
      // As a browser's EventSource does: an event's id and retry count even when it carries no data (a priming event).
      if (event.id !== null) lastEventId = event.id === '' ? null : event.id;
      if (event.retry !== null) retryMs = Number(event.retry);
      if (event.data.length === 0) {
        if (event.comment) out += ':\n\n'; // a keep-alive: keep the client's connection busy too
        continue;
      }
      out += await relayed(event);
    }
    return out;
  };

  /** The client's id for the event being relayed (undefined: none to give). */
  const clientId = (): string | undefined => (lastEventId === null || options.eventId === undefined ? undefined : options.eventId(lastEventId));

  const relayed = async (event: SseEvent): Promise<string> => {
    const data = event.data.join('\n');
    // A priming event (an id and empty data): for the gateway's own resumption, nothing the client needs.
    if (data === '' && event.id !== null) return '';
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return serialize(event, data, clientId());
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) return serialize(event, data, clientId());
    const answer = !answered && options.isAnswer(message as RelayedMessage);
    if (answer) answered = true;
    const next = await options.onMessage(message as RelayedMessage, answer);
    return next === null ? '' : serialize(event, JSON.stringify(next), clientId());
  };

  const failure = (kind: 'timeout' | 'ended' | 'oversized'): Buffer | null => {
    if (answered) return null;
    answered = true;
    const message = options.onFailure(kind);
    return message === null ? null : Buffer.from(serialize(blank(), JSON.stringify(message)));
  };

  /**
   * After the stream ended or broke before the answer: the upstream's stream again from its last event id, when
   * it gave one, after its `retry` (within the deadline); false when it cannot be resumed.
   */
  const resumed = async (): Promise<boolean> => {
    if (answered || lastEventId === null || options.resume === undefined || resumes >= MAX_RESUMES) return false;
    resumes++;
    const wait = Math.min(retryMs, MAX_RETRY_WAIT_MS, options.deadline === null ? Infinity : Math.max(0, options.deadline - performance.now()));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (options.deadline !== null && performance.now() >= options.deadline) return false;
    let next: Readable | null;
    try {
      next = await options.resume(lastEventId);
    } catch {
      return false;
    }
    if (next === null) return false;
    if (!source.current.destroyed) source.current.destroy();
    source.current = next;
    iterator = next[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    // The new stream starts on an event boundary: what was left of the old one is dropped.
    decoder = new StringDecoder('utf8');
    pendingLine = '';
    current = blank();
    held = 0;
    return true;
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
        if (await resumed()) continue;
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
        if (await resumed()) continue;
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
    if (!source.current.destroyed) source.current.destroy();
  }
}

function blank(): SseEvent {
  return { event: null, id: null, retry: null, data: [], comment: false };
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
  // An id is kept for the gateway's own resumption, never sent on: see relayEvents.
  else if (name === 'id' && !value.includes('\u0000')) event.id = value;
}

/** A JSON-RPC message as one `message` event of an event stream (as the gateway sends its own). */
export function messageEvent(message: unknown): string {
  return serialize({ event: 'message', id: null, retry: null, data: [], comment: false }, JSON.stringify(message));
}

function serialize(event: SseEvent, data: string, id?: string): string {
  let out = '';
  if (id !== undefined) out += `id: ${id}\n`;
  if (event.event !== null) out += `event: ${event.event}\n`;
  if (event.retry !== null) out += `retry: ${event.retry}\n`;
  for (const line of data.split('\n')) out += `data: ${line}\n`;
  return `${out}\n`;
}
