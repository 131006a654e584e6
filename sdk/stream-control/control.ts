import { StringDecoder } from 'node:string_decoder';
import { type BodySource, type ChunkSink, type Flow, type GatewayError, type GatewayResponse, type RequestContext, routeApi, stateKey, toSource, UpstreamBody, upstreamBodyError, GatewayError as Err } from '../../core/index.js';
import { hasEventStreamType } from '../door-stream.js';
import { SSEParser, type SSEEvent } from '../sse.js';
import { doorStreamOf, serializeEvent, type DoorStream } from './doors.js';

type Json = Record<string, unknown>;

/** Why a stream was ended early, as the log, `/metrics` and traces report it. */
export interface StreamCut {
  /** `guardrail`, `usage_limit`, `idle_timeout`, or a plugin's own reason. */
  reason: string;
  /** What cut it: the guardrail (hook) id, the limit policy id, the timeout in ms. */
  by: string;
  /** The error code the client got. */
  code: string;
  /** Characters of answer text the client got before the cut. */
  chars_sent: number;
}

/** The cut of a request's stream, when one was cut (read it in a log tap). */
export const STREAM_CUT = stateKey<StreamCut>('stream-control:cut');

/** What a watcher sees of a stream and may do to it. */
export interface StreamView {
  /** All the answer text so far (the door's text deltas joined). */
  readonly text: string;
  /** How much of `text` went (or is going) out to the client. */
  readonly released: number;
  /** True on the last scan: the upstream's stream ended, nothing more will come. */
  readonly ended: boolean;
  /** The request. */
  readonly ctx: RequestContext;
  /**
   * Ends the stream now: nothing not yet released goes out, the client gets `error` as the door's
   * terminal error (with `extra` in its data), and the upstream request is aborted.
   */
  cut(error: GatewayError, cut: { reason: string; by: string }, extra?: Json): void;
  /** Replaces `text[start, end)` with `replacement` in what the client gets; only text not yet released. */
  redact(start: number, end: number, replacement: string): void;
}

/**
 * A plugin's part in watching a stream. `scan` runs after each piece of new text (and once more
 * with `ended` before the stream's closing event), and may cut or redact; a promise holds the
 * stream until it settles. `releasable` says how far the text may go out: text past it is held
 * back (a redaction window), so a watcher that never redacts leaves it at Infinity.
 */
export interface StreamWatcher {
  /** Looks at the text so far (`view.ended` on the last call); may cut or redact; a promise holds the stream. */
  scan(view: StreamView): void | Promise<void>;
  /** Text before this position may go out; later text is held until a later scan moves it. */
  releasable(view: StreamView): number;
  /**
   * How long the text must be before this watcher's next scan (asked after each scan; the last scan, at the
   * end, always comes). Without it, every piece of new text is scanned. Most events then cost the stream a
   * comparison, not a call.
   */
  due?(view: StreamView): number;
}

interface Pending {
  event: SSEEvent;
  /** The event's bytes as they came (sent as they are unless redacted); null when parsed the slow way. */
  raw: string | null;
  /** The text the event adds: [start, end) in the stream's text. */
  start: number;
  end: number;
}

interface Redaction {
  start: number;
  end: number;
  replacement: string;
}

/** The stream control of a response, once made (one per request). */
const CONTROL = stateKey<StreamControl>('stream-control');

/**
 * One watched stream: the door's events parsed once for every watcher (guardrails, budgets, idle
 * timeouts), text held back only as far as a watcher asks, cuts told in the door's format.
 */
export class StreamControl implements StreamView {
  readonly ctx: RequestContext;
  readonly #door: DoorStream;
  /** The upstream's flow (null until it starts): paused while a scan runs or the client is slow. */
  #source: Flow | null = null;
  #sourcePaused = false;
  /** What the client reads: the released events, held until its writer takes them. */
  readonly #output: UpstreamBody;
  /** The slow way, for streams with \r line ends: every event re-serialized. */
  #parser: SSEParser | null = null;
  /** Text after the last complete event (the fast way). */
  #rest = '';
  /** Bytes to text: a character whose bytes a chunk boundary splits waits for the rest of them. */
  readonly #decoder = new StringDecoder('utf8');
  readonly #watchers: StreamWatcher[] = [];
  /** Per watcher: the text length its next scan waits for. */
  readonly #due: number[] = [];
  readonly #queue: Pending[] = [];
  #redactions: Redaction[] = [];
  #text = '';
  #released = 0;
  #ended = false;
  #done = false;
  #end: SSEEvent | null = null;
  /** A scan in progress: the source waits. */
  #busy = false;
  /** Text came while a scan ran: scan again when it ends. */
  #dirty = false;
  /** The client reads slower than the upstream writes. */
  #full = false;
  #idleMs = 0;
  #idleError: (() => GatewayError) | null = null;
  #idleTimer: NodeJS.Timeout | null = null;

  constructor(ctx: RequestContext, source: BodySource, door: DoorStream) {
    this.ctx = ctx;
    this.#door = door;
    this.#output = new UpstreamBody(200, {
      pause: () => undefined,
      resume: () => {
        this.#full = false;
        if (!this.#busy && !this.#done) this.#resumeSource();
      },
      abort: (reason) => {
        // The client left (or the writer gave up): stop reading the upstream so its connection is freed.
        this.#finish();
        this.#source?.abort(reason);
        this.#output.finish(reason);
      },
    });
    // Started on the next tick, as a Readable's flow starts: the plugins that asked for the control attach their
    // watchers first, whatever the source already holds (an answer that came whole is pushed at once).
    process.nextTick(() => {
      const sink: ChunkSink = {
        data: (chunk) => {
          this.#onData(chunk);
          return !this.#sourcePaused;
        },
        end: (error) => (error === null ? this.#onEnd() : this.#onError(error)),
      };
      if (this.#done) {
        // Cut or left before it began: the upstream is stopped unread.
        source.start(sink).abort(new Error('The stream ended before it began.'));
        return;
      }
      this.#source = source.start(sink);
      if (this.#sourcePaused) this.#source.pause();
    });
  }

  #pauseSource(): void {
    this.#sourcePaused = true;
    // Not started yet, or inside its first flush: the flag (and the false from data()) pauses it.
    this.#source?.pause();
  }

  #resumeSource(): void {
    if (!this.#sourcePaused) return;
    this.#sourcePaused = false;
    this.#source?.resume();
  }

  get text(): string {
    return this.#text;
  }
  get released(): number {
    return this.#released;
  }
  get ended(): boolean {
    return this.#ended;
  }
  /** The stream the client reads. */
  get output(): BodySource {
    return this.#output;
  }

  /** Adds a watcher; its first scan comes with the next text. */
  watch(watcher: StreamWatcher): void {
    this.#watchers.push(watcher);
    this.#due.push(0);
  }

  /**
   * Ends the stream with `error()` when no upstream data came for `ms` (the first included); the
   * shortest of several calls wins.
   */
  idleTimeout(ms: number, error: () => GatewayError): void {
    if (this.#idleMs !== 0 && this.#idleMs <= ms) return;
    this.#idleMs = ms;
    this.#idleError = error;
    // A shorter timeout than a running one: a new timer (refreshing the old one would keep its length).
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
    this.#armIdle();
  }

  cut(given: GatewayError, cut: { reason: string; by: string }, extra?: Json): void {
    if (this.#done) return;
    // Where it was cut is part of the message: the client and the log's error_message both say it.
    const error = new Err(given.code, `${given.message} The stream was cut after ${this.#released} characters of answer text.`, {
      spec: { status: given.status, type: given.type },
      param: given.param ?? undefined,
      headers: given.headers,
    });
    this.ctx.error = error;
    this.ctx.set(STREAM_CUT, { reason: cut.reason, by: cut.by, code: error.code, chars_sent: this.#released });
    this.#push(this.#door.terminal(error, extra));
    this.#finish();
    this.#output.finish(null);
    // Abort the upstream: no further tokens are generated (or billed) for a client that will not get them.
    this.#source?.abort(new Error(`The stream was cut: ${cut.reason}.`));
  }

  redact(start: number, end: number, replacement: string): void {
    if (start < this.#released) start = this.#released;
    if (end <= start) return;
    this.#redactions.push({ start, end, replacement });
  }

  #armIdle(): void {
    if (this.#idleMs === 0 || this.#done) return;
    if (this.#idleTimer !== null) this.#idleTimer.refresh();
    else this.#idleTimer = setTimeout(() => this.cut(this.#idleError!(), { reason: 'idle_timeout', by: `${this.#idleMs} ms` }), this.#idleMs);
  }

  #finish(): void {
    this.#done = true;
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
  }

  #push(text: string): void {
    if (text !== '' && !this.#output.push(Buffer.from(text))) this.#full = true;
  }

  #onData(chunk: Buffer): void {
    if (this.#done) return;
    this.#armIdle();
    this.#frame(this.#decoder.write(chunk), false);
    if (this.#busy) this.#dirty = true;
    else this.#step();
  }

  #onEnd(): void {
    if (this.#done) return;
    this.#frame(this.#decoder.end(), true);
    this.#ended = true;
    // A scan still running takes the end with it: it scans again (the last time) when it settles.
    if (this.#busy) this.#dirty = true;
    else this.#step();
  }

  #onError(err: Error): void {
    if (this.#done) return;
    const error = upstreamBodyError(err) ?? new Err('upstream_unreachable', 'The upstream connection broke off during the response.');
    // What the watchers already let go still goes out (text they hold back does not: it was never checked), then
    // the door's terminal error.
    let upTo = this.#text.length;
    for (const w of this.#watchers) upTo = Math.min(upTo, w.releasable(this));
    this.#release(upTo);
    this.cut(error, { reason: 'upstream_error', by: error.code });
  }

  /**
   * Splits text into events. The usual stream (\n line ends) is cut at its blank lines and each event
   * kept as it came, so what goes out unchanged is byte for byte what arrived, and an event is read
   * without parsing its lines when it is one `data:` line (after an `event:` line or not). Anything
   * else (\r line ends, comments, several data lines) goes through the full SSE parser.
   */
  #frame(text: string, last: boolean): void {
    if (this.#parser === null && text.indexOf('\r') !== -1) {
      this.#parser = new SSEParser();
      text = this.#rest + text;
      this.#rest = '';
    }
    if (this.#parser !== null) {
      for (const event of this.#parser.push(text)) this.#add(event, null);
      if (last) for (const event of this.#parser.end()) this.#add(event, null);
      return;
    }
    const buffer = this.#rest === '' ? text : this.#rest + text;
    let start = 0;
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n', start)) {
      this.#block(buffer.slice(start, end + 2));
      start = end + 2;
    }
    this.#rest = start === 0 ? buffer : buffer.slice(start);
    if (last && this.#rest !== '') {
      // Ended without its blank line: the parser reads what is there.
      const parser = new SSEParser();
      for (const event of [...parser.push(this.#rest), ...parser.end()]) this.#add(event, null);
      this.#rest = '';
    }
  }

  /** One event's text, blank line included. */
  #block(raw: string): void {
    const last = raw.length - 2;
    let event: string | null = null;
    let at = 0;
    if (raw.startsWith('event: ')) {
      const line = raw.indexOf('\n');
      event = raw.slice(7, line);
      at = line + 1;
    }
    if (raw.startsWith('data: ', at) && raw.indexOf('\n', at) === last) return this.#add({ event, data: raw.slice(at + 6, last) }, raw);
    // Comments, several data lines, other fields: parsed in full; a block with no event (a comment) still goes out.
    const parsed = new SSEParser().push(raw);
    if (parsed.length === 0) this.#queue.push({ event: { event: null, data: '' }, raw, start: this.#text.length, end: this.#text.length });
    for (const e of parsed) this.#add(e, raw);
  }

  #add(event: SSEEvent, raw: string | null): void {
    if (this.#end !== null) return;
    if (this.#door.isEnd(event)) {
      this.#end = event;
      return;
    }
    let text = '';
    try {
      text = this.#door.text(event);
    } catch {
      /* not JSON: passed through untouched */
    }
    const start = this.#text.length;
    if (text !== '') this.#text += text;
    this.#queue.push({ event, raw, start, end: this.#text.length });
  }

  /** Runs the watchers on the new text, then sends what they let go; waits for a watcher's promise. */
  #step(): void {
    if (this.#done) return;
    let pending: Promise<void>[] | null = null;
    const length = this.#text.length;
    for (let i = 0; i < this.#watchers.length; i++) {
      if (!this.#ended && length < this.#due[i]!) continue;
      const w = this.#watchers[i]!;
      try {
        const r = w.scan(this);
        if (r !== undefined) (pending ??= []).push(r);
        // Known once a scan ran (an async one moves it again when it settles, see below).
        this.#due[i] = w.due?.(this) ?? 0;
      } catch (err) {
        this.#fail(err);
        return;
      }
      if (this.#done) return;
    }
    if (pending === null) return this.#afterScan();
    this.#busy = true;
    this.#pauseSource();
    Promise.all(pending).then(
      () => {
        this.#busy = false;
        if (this.#done) return;
        for (let i = 0; i < this.#watchers.length; i++) this.#due[i] = this.#watchers[i]!.due?.(this) ?? 0;
        if (this.#dirty) {
          this.#dirty = false;
          return this.#step();
        }
        this.#afterScan();
      },
      (err: unknown) => {
        this.#busy = false;
        this.#fail(err);
      },
    );
  }

  #afterScan(): void {
    let upTo = this.#text.length;
    if (!this.#ended) for (const w of this.#watchers) upTo = Math.min(upTo, w.releasable(this));
    this.#release(upTo);
    if (this.#ended) {
      this.#push(this.#end !== null ? serializeEvent(this.#end) : this.#door.missingEnd());
      this.#finish();
      this.#output.finish(null);
      return;
    }
    if (this.#full) this.#pauseSource();
    else this.#resumeSource();
  }

  /** A watcher threw: the stream ends with an internal error rather than going on unchecked. */
  #fail(err: unknown): void {
    this.ctx.log.error({ err }, 'stream control: a watcher failed; the stream is ended');
    this.cut(new Err('internal_error', 'The gateway could not check the rest of this answer.'), { reason: 'watcher_error', by: 'stream-control' });
  }

  /** Sends every queued event whose text ends at or before `upTo` (events without text go with the text before them). */
  #release(upTo: number): void {
    let out = '';
    const queue = this.#queue;
    let i = 0;
    for (; i < queue.length; i++) {
      const p = queue[i]!;
      if (p.end > upTo || (p.start === p.end && p.start > upTo)) break;
      out += p.start === p.end || !this.#touched(p) ? (p.raw ?? serializeEvent(p.event)) : this.#door.rewrite(p.event, this.#redacted(p));
      if (p.end > this.#released) this.#released = p.end;
    }
    if (i > 0) queue.splice(0, i);
    // Spans wholly sent are done with: the next events need not look at them.
    if (this.#redactions.length > 0 && this.#redactions[0]!.end <= this.#released) this.#redactions = this.#redactions.filter((r) => r.end > this.#released);
    this.#push(out);
  }

  #touched(p: Pending): boolean {
    for (const r of this.#redactions) if (r.start < p.end && r.end > p.start) return true;
    return false;
  }

  /** The event's text with the redactions applied: a replacement goes where its span starts. */
  #redacted(p: Pending): string {
    let out = '';
    let at = p.start;
    const spans = this.#redactions.filter((r) => r.start < p.end && r.end > p.start).sort((a, b) => a.start - b.start);
    for (const r of spans) {
      if (r.start >= at) {
        out += this.#text.slice(at, r.start);
        out += r.replacement;
      }
      at = Math.max(at, Math.min(r.end, p.end));
    }
    return out + this.#text.slice(at, p.end);
  }
}

/**
 * The stream control of an SSE answer, made the first time a plugin asks (its output becomes the
 * answer's body) and shared by every later one, so the stream is parsed once however many watch it.
 * Null for an answer that is not an event stream.
 */
export function streamControl(ctx: RequestContext, response: GatewayResponse): StreamControl | null {
  const known = ctx.get(CONTROL);
  if (known !== undefined && response.body === known.output) return known;
  if (response.body === null || !hasEventStreamType(response)) return null;
  // A stream replayed from a store (the cache) comes whole: it is watched the same way.
  const control = new StreamControl(ctx, toSource(response.body), doorStreamOf(routeApi(ctx.route!)));
  ctx.set(CONTROL, control);
  response.body = control.output;
  return control;
}
