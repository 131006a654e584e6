import { StringDecoder } from 'node:string_decoder';
import {
  defineErrors,
  discardResponse,
  type BodyObserver,
  type BodySource,
  type ChunkSink,
  type Flow,
  GatewayError,
  type GatewayResponse,
  type RequestContext,
  routeApi,
  stateKey,
  toSource,
  upstreamBodyError,
  type Usage,
} from '../../core/index.js';
import { isEventStream } from '../door-stream.js';
import { CHARS_PER_TOKEN, estimateRequestPromptTokens, USAGE_SEGMENTS, type UsageSegment } from '../observe/summary.js';
import { isObject } from '../json-object.js';
import { addUsage } from '../openai/usage.js';
import { SSEParser, type SSEEvent } from '../sse.js';
import type { Continued, ContinuationMode } from './continuation.js';
import { doorSeamOf, type DoorSeam, type SeamItem } from './seams.js';

/** How a stream broke: its connection (reset, body timeout), an error event, silence past `stream_idle_timeout`, or an end without its closing event. */
export type BreakReason = 'connection' | 'error_event' | 'idle_timeout' | 'ended_early';

/** One break of a request's stream, and what became of it. */
export interface StreamBreak {
  /** How it broke. */
  reason: BreakReason;
  /** Characters of answer text the client had when it broke (all of them carried into the continuation). */
  afterChars: number;
  /** The gateway error code of a connection that broke or went quiet; null for an error event or an early end. */
  error: string | null;
  /** `continued` when a continuation took over; else why not (`tool_call`, `limit`, `no_target`, …: see docs/formats.md). */
  outcome: string;
}

/** What stream recovery did for a request (read it in a log tap: the log, `/metrics`, traces). */
export interface StreamRecovery {
  /** Continuations spliced into the client's stream. */
  continuations: number;
  /** Each break, in order. */
  breaks: StreamBreak[];
  /** Recovery watches the stream's silence itself (`stream_idle_timeout`): the idle timeout's own cut stands aside. */
  ownsIdle: boolean;
}

/** The stream recovery of a request, once a strategy or the retry plugin asked for it. */
export const STREAM_RECOVERY = stateKey<StreamRecovery>('stream-recovery');

/** Continuations a request may splice in when its config's `max_continuations` is not set. */
export const DEFAULT_MAX_CONTINUATIONS = 1;
/** The most a config may ask for (`max_continuations`): each is a whole upstream call. */
export const MAX_CONTINUATIONS = 5;

/** Of a continuation's text, at most this many characters are held to find a repeat of what was sent. */
export const MAX_OVERLAP = 1024;
/** A repeat shorter than this is taken for a coincidence (`bookkee` + `eper`) and kept. */
export const MIN_OVERLAP = 4;

/**
 * The characters a continuation repeats: the longest suffix of `sent` (at least `min` long) that `next`
 * starts with; 0 when none is.
 */
export function seamOverlap(sent: string, next: string, min = MIN_OVERLAP): number {
  for (let k = Math.min(sent.length, next.length, MAX_OVERLAP); k >= min; k--) {
    if (sent.endsWith(next.slice(0, k))) return k;
  }
  return 0;
}

/** How a request's stream recovers, as its strategy (or retry) set it up. */
export interface RecoveryOptions {
  /** Most continuations the request may splice in (its config's `max_continuations`, default 1). */
  max: number;
  /** `stream_idle_timeout` of the target that answered (ms): silence that long is a break; 0 for none. */
  idleMs: number;
  /**
   * Calls for the rest of `partial`: resolves with the answer of the first target that took it, null when none
   * did (each failed, or none is left). Its answer is a new call's: the recovery splices its events in. `signal`
   * aborts the call when the stream ends while it is pending (the client left, a guardrail cut it).
   */
  next(partial: string, signal: AbortSignal): Promise<Continued | null>;
}

/**
 * Wraps a streamed answer so that a break (a connection reset, an error event, silence past the idle timeout,
 * an end without its closing event) after the stream started is continued by another call, spliced into the
 * same client stream. Returns the answer unchanged for a route whose streams are not continued (not one of
 * the three front doors) or one that is not a 2xx event stream.
 */
export function recoverStream(ctx: RequestContext, response: GatewayResponse, options: RecoveryOptions): GatewayResponse {
  if (response.status < 200 || response.status >= 300 || !isEventStream(response) || ctx.route === null) return response;
  const route = routeApi(ctx.route);
  const seam = doorSeamOf(route);
  if (seam === null) return response;
  let record = ctx.get(STREAM_RECOVERY);
  if (record === undefined) {
    record = { continuations: 0, breaks: [], ownsIdle: false };
    ctx.set(STREAM_RECOVERY, record);
  }
  if (options.idleMs > 0) record.ownsIdle = true;
  const body = new RecoveringStream(ctx, response, seam, options, record);
  return { status: response.status, headers: response.headers, body, observers: null };
}

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };


/** One upstream answer being read into the client's stream. */
interface Segment {
  flow: Flow | null;
  /** We stopped reading it (a break we act on, the client left). */
  stopped: boolean;
  /** Its closing event came. */
  closed: boolean;
  ended: Promise<void>;
  onEnded: () => void;
  observers: BodyObserver[] | null;
  /** The target path and provider that answered it, and where the client's text stood when it began. */
  target: string | null;
  provider: string | null;
  startChars: number;
  /** Characters of answer its request carried (a continuation's partial answer, priced as its input). */
  carried: number;
  /** Its usage was added to the request's. */
  counted: boolean;
  /** Silence that long is a break (its target's `stream_idle_timeout`); 0: not watched here (an inner recovery does). */
  idleMs: number;
  /** Its body is an inner recovery's (a leaf's retry): a break it reports was recorded there already. */
  nested: boolean;
  /** The model its target was called with, and whether its provider bills that one rather than the answer's. */
  requestedModel: string | null;
  billedRequested: boolean;
}

/** The client's stream: the first answer's events, then each continuation's, with a seam between. */
class RecoveringStream implements BodySource {
  readonly #ctx: RequestContext;
  readonly #first: GatewayResponse;
  readonly #seam: DoorSeam;
  readonly #options: RecoveryOptions;
  readonly #record: StreamRecovery;
  #sink: ChunkSink | null = null;
  #segment: Segment | null = null;
  #done = false;
  /** The client reads slower than we write. */
  #full = false;
  #idle: NodeJS.Timeout | null = null;
  /** A continuation's first text, held until the repeat at the seam is known. */
  #hold: { items: SeamItem[]; text: string; mode: ContinuationMode; sent: string } | null = null;
  /** Usage of each call that ended, and their sum. */
  readonly #segments: UsageSegment[] = [];
  #prior: Usage = ZERO;
  /** The log's note on the attempt that continued (its trimmed characters are known once the seam is). */
  #continued: { carriedChars: number; mode: string; trimmedChars: number } | null = null;
  /** A continuation call in progress, called off if the stream ends first. */
  #pending: AbortController | null = null;

  constructor(ctx: RequestContext, first: GatewayResponse, seam: DoorSeam, options: RecoveryOptions, record: StreamRecovery) {
    this.#ctx = ctx;
    this.#first = first;
    this.#seam = seam;
    this.#options = options;
    this.#record = record;
  }

  start(sink: ChunkSink): Flow {
    this.#sink = sink;
    this.#begin(this.#first, 0, this.#options.idleMs);
    return {
      pause: () => this.#pause(),
      resume: () => {
        this.#full = false;
        const seg = this.#segment;
        if (seg === null || seg.stopped || seg.closed || this.#done) return;
        this.#armIdle();
        seg.flow?.resume();
      },
      abort: (reason) => {
        if (this.#done) return;
        const seg = this.#segment;
        this.#stop(seg);
        // A continuation call still pending is called off (its request body is the client's again at once).
        this.#pending?.abort(reason ?? new Error('The stream was aborted.'));
        // The client left (or a watcher cut the stream) after a continuation: the request still used every call.
        if (seg !== null && this.#segments.length > 0) this.#settle(seg, true);
        this.#finish(reason ?? new Error('The stream was aborted.'));
      },
    };
  }

  /** The client reads slower than the upstream writes: the upstream waits, and its silence is not the upstream's. */
  #pause(): void {
    this.#full = true;
    this.#clearIdle();
    this.#segment?.flow?.pause();
  }

  /** Starts reading an answer into the client's stream. */
  #begin(response: GatewayResponse, carried: number, idleMs: number): void {
    let onEnded!: () => void;
    const ended = new Promise<void>((resolve) => (onEnded = resolve));
    const ctx = this.#ctx;
    const nested = response.body instanceof RecoveringStream;
    const over = ctx.resolvedTarget?.override_params;
    const requested = isObject(over) && typeof over.model === 'string' ? over.model : ctx.model;
    const seg: Segment = {
      flow: null,
      stopped: false,
      closed: false,
      ended,
      onEnded,
      observers: response.observers,
      target: ctx.targetPath,
      provider: ctx.provider?.name ?? null,
      startChars: this.#seam.sent.length,
      carried,
      counted: false,
      // An inner recovery (a leaf's retry) watches this body's silence itself.
      idleMs: nested ? 0 : idleMs,
      nested,
      requestedModel: requested,
      billedRequested: ctx.provider?.billedModel === 'requested',
    };
    this.#segment = seg;
    const decoder = new StringDecoder('utf8');
    const parser = new SSEParser();
    this.#armIdle();
    const flow = toSource(response.body).start({
      data: (chunk) => {
        if (seg.observers !== null) for (const o of seg.observers) o.onChunk(chunk);
        if (seg.stopped || this.#done) return false;
        this.#armIdle();
        this.#events(seg, parser.push(decoder.write(chunk)));
        return !this.#full;
      },
      end: (error) => {
        if (seg.observers !== null) for (const o of seg.observers) o.onEnd?.(error);
        seg.onEnded();
        if (seg.stopped || this.#done) return;
        if (error === null) {
          const rest = parser.push(decoder.end());
          for (const e of parser.end()) rest.push(e);
          this.#events(seg, rest);
          if (seg.stopped || this.#done) return;
        }
        if (seg.closed) return this.#complete();
        this.#breakOff(seg, error === null ? 'ended_early' : 'connection', error, null);
      },
    });
    seg.flow = flow;
    if (seg.stopped) flow.abort(new Error('The stream broke.'));
    else if (this.#full) flow.pause();
  }

  #events(seg: Segment, events: SSEEvent[]): void {
    for (const event of events) {
      if (seg.stopped || seg.closed || this.#done) return;
      const item = this.#seam.read(event);
      switch (item.action) {
        case 'drop':
          break;
        case 'emit':
          if (this.#hold !== null && item.neutral !== true) {
            if (item.text !== '') {
              this.#hold.items.push(item);
              this.#hold.text += item.text;
              if (this.#decided()) this.#release();
              break;
            }
            // An event without text after held text: the seam is decided with what is held (no reordering). Before
            // any text (a ping, an opening event) it goes out and the hold goes on.
            if (this.#hold.items.length > 0) this.#release();
          }
          this.#out(item.render(item.text));
          break;
        case 'end':
          if (this.#hold !== null) this.#release();
          this.#out(item.render(item.text));
          seg.closed = true;
          this.#clearIdle();
          break;
        case 'break':
          this.#stop(seg);
          this.#breakOff(seg, 'error_event', null, item);
          return;
      }
    }
  }

  /** Whether the held text says enough to know the repeat at the seam. */
  #decided(): boolean {
    const hold = this.#hold!;
    if (hold.mode === 'prefill') return hold.text.trimStart() !== '' || hold.text.length >= trailingSpace(hold.sent);
    // An assistant prefix may be answered with the prefix itself first (Mistral does): known once it is all there, or not.
    if (hold.mode === 'prefix') return hold.text.length >= hold.sent.length || !hold.sent.startsWith(hold.text);
    // A held text found nowhere in what was sent cannot grow into a longer repeat.
    return hold.text.length >= Math.min(hold.sent.length, MAX_OVERLAP) || hold.sent.indexOf(hold.text) === -1;
  }

  /** Sends the held text, less what repeats what was sent. */
  #release(): void {
    const hold = this.#hold!;
    this.#hold = null;
    let trim =
      hold.mode === 'prefill' ? Math.min(leadingSpace(hold.text), trailingSpace(hold.sent)) : hold.mode === 'prefix' ? (hold.text.startsWith(hold.sent) ? hold.sent.length : 0) : seamOverlap(hold.sent, hold.text);
    if (this.#continued !== null) this.#continued.trimmedChars = trim;
    for (const item of hold.items) {
      if (trim >= item.text.length) {
        trim -= item.text.length;
        continue;
      }
      const text = item.text.slice(trim);
      trim = 0;
      this.#out(item.render(text));
    }
  }

  #out(text: string): void {
    if (text === '' || this.#done) return;
    if (this.#sink!.data(Buffer.from(text)) === false) this.#pause();
  }

  #stop(seg: Segment | null): void {
    if (seg === null || seg.stopped) return;
    seg.stopped = true;
    this.#clearIdle();
    seg.flow?.abort(new Error('The stream broke.'));
  }

  #armIdle(): void {
    const ms = this.#segment?.idleMs ?? 0;
    if (ms <= 0 || this.#done || this.#full) return;
    if (this.#idle !== null) {
      this.#idle.refresh();
      return;
    }
    this.#idle = setTimeout(() => {
      this.#idle = null;
      const seg = this.#segment;
      if (seg === null || seg.stopped || seg.closed || this.#done) return;
      this.#stop(seg);
      this.#breakOff(seg, 'idle_timeout', streamIdleError(ms), null);
    }, ms);
  }

  #clearIdle(): void {
    if (this.#idle !== null) clearTimeout(this.#idle);
    this.#idle = null;
  }

  /** A break, handled; a failure in handling it ends the stream with it rather than leave the client waiting. */
  #breakOff(seg: Segment, reason: BreakReason, error: Error | null, event: SeamItem | null): void {
    this.#broke(seg, reason, error, event).catch((err: unknown) => {
      this.#ctx.log.error({ err }, 'stream recovery failed; the stream is ended');
      this.#finish(err instanceof Error ? err : new Error(String(err)));
    });
  }

  /** The call in progress broke: the rest comes from a continuation, or the stream ends as it would have without one. */
  async #broke(seg: Segment, reason: BreakReason, error: Error | null, event: SeamItem | null): Promise<void> {
    this.#clearIdle();
    // Its observers (usage readers) have seen its end (a source ends at once when aborted; the timer only guards one that does not).
    let guard: NodeJS.Timeout | undefined;
    await Promise.race([seg.ended, new Promise<void>((resolve) => (guard = setTimeout(resolve, 1000).unref()))]);
    clearTimeout(guard);
    if (this.#done) return;
    if (this.#hold !== null) this.#release();
    const ctx = this.#ctx;
    const partial = this.#seam.sent;
    const code = error === null ? null : error instanceof GatewayError ? error.code : (upstreamBodyError(error)?.code ?? 'upstream_unreachable');
    // A break an inner recovery (a leaf's retry) gave up on is the one it recorded: its outcome is decided here.
    const inner = seg.nested ? this.#record.breaks.at(-1) : undefined;
    const entry: StreamBreak = inner ?? { reason, afterChars: partial.length, error: code, outcome: 'continued' };
    if (inner === undefined) {
      this.#record.breaks.push(entry);
      const attempt = ctx.attempts.at(-1);
      if (attempt !== undefined) attempt.streamBreak = { reason, afterChars: partial.length, error: code };
    }
    entry.outcome = 'continued';
    if (this.#seam.finished) {
      // The answer was whole; only its closing events were lost: they are sent, the error is not.
      entry.outcome = 'finished';
      if (this.#segments.length > 0) this.#settle(seg, true);
      this.#out(this.#seam.closing(this.#segments.length > 0 ? this.#prior : ctx.usage));
      return this.#finish(null);
    }
    const refusal = this.#seam.refusal ?? bodyRefusal(ctx.body) ?? (this.#record.continuations >= this.#options.max ? 'limit' : null) ?? (ctx.signal.aborted ? 'client_gone' : null);
    if (refusal !== null) {
      entry.outcome = refusal;
      if (this.#segments.length > 0) this.#settle(seg, true);
      return this.#endAsBefore(reason, error, event);
    }
    this.#close(seg, true);
    ctx.usage = null;
    let continued: Continued | null = null;
    const pending = new AbortController();
    this.#pending = pending;
    try {
      continued = await this.#options.next(partial, pending.signal);
    } catch {
      continued = null;
    } finally {
      this.#pending = null;
    }
    if (this.#done) {
      if (continued !== null) discardResponse(continued.response);
      return;
    }
    if (continued === null || continued.response.status < 200 || continued.response.status >= 300 || !isEventStream(continued.response)) {
      if (continued !== null) discardResponse(continued.response);
      entry.outcome = 'no_target';
      ctx.usage = this.#prior;
      ctx.set(USAGE_SEGMENTS, this.#segments);
      return this.#endAsBefore(reason, error, event);
    }
    this.#record.continuations++;
    const next = ctx.attempts.at(-1);
    this.#continued = { carriedChars: partial.length, mode: continued.mode, trimmedChars: 0 };
    if (next !== undefined) next.continued = this.#continued;
    this.#seam.next(this.#prior);
    if (continued.mode !== 'restart') this.#hold = { items: [], text: '', mode: continued.mode, sent: partial };
    this.#begin(continued.response, continued.mode === 'restart' ? 0 : partial.length, continued.idleMs ?? this.#options.idleMs);
  }

  /** A call's usage (reported, or estimated when it broke before reporting all of it), added to the request's. */
  #close(seg: Segment, broke: boolean): void {
    if (seg.counted) return;
    seg.counted = true;
    const ctx = this.#ctx;
    const chars = this.#seam.sent.length - seg.startChars;
    const output = Math.ceil(chars / CHARS_PER_TOKEN);
    let usage = ctx.usage;
    let estimated = false;
    if (usage === null) {
      const prompt = estimateRequestPromptTokens(ctx) + Math.ceil(seg.carried / CHARS_PER_TOKEN);
      usage = { prompt_tokens: prompt, completion_tokens: output, total_tokens: prompt + output };
      estimated = true;
    } else if (broke && usage.completion_tokens < output) {
      usage = { ...usage, completion_tokens: output, total_tokens: usage.prompt_tokens + output };
      estimated = true;
    }
    const answered = this.#segments.length === 0 ? (this.#seam.segmentModel ?? this.#seam.model) : this.#seam.segmentModel;
    this.#segments.push({ target: seg.target, provider: seg.provider, model: answered ?? seg.requestedModel, requestedModel: seg.requestedModel, billedRequested: seg.billedRequested, usage, estimated });
    this.#prior = addUsage(this.#prior, usage);
  }

  /** The answer ended whole. */
  #complete(): void {
    const seg = this.#segment;
    if (this.#segments.length > 0 && seg !== null) this.#settle(seg, false);
    this.#finish(null);
  }

  /** A continued stream ended (whole, broken or left): its usage is every call's, each priced at its own provider's rates. */
  #settle(seg: Segment, broke: boolean): void {
    this.#close(seg, broke);
    this.#ctx.usage = this.#prior;
    this.#ctx.set(USAGE_SEGMENTS, this.#segments);
  }

  /** No continuation: the stream ends as it would have without recovery. */
  #endAsBefore(reason: BreakReason, error: Error | null, event: SeamItem | null): void {
    if (reason === 'error_event' && event !== null) {
      this.#out(event.render(''));
      this.#out(this.#seam.tail());
      return this.#finish(null);
    }
    if (reason === 'ended_early') return this.#finish(null);
    this.#finish(error ?? new GatewayError('upstream_unreachable', 'The upstream connection broke off during the response.'));
  }

  #finish(error: Error | null): void {
    if (this.#done) return;
    this.#done = true;
    this.#clearIdle();
    this.#sink!.end(error);
  }
}

/**
 * What in the request itself rules a continuation out: several choices (`n` > 1: each would need its own), or a
 * Messages `thread` (a conversation held on a server, which a continuation would fork).
 */
function bodyRefusal(body: Record<string, unknown> | null): string | null {
  if (body === null) return null;
  if (typeof body.n === 'number' && body.n > 1) return 'several_choices';
  if (body.thread !== undefined && body.thread !== null) return 'thread';
  return null;
}

const leadingSpace = (text: string): number => text.length - text.trimStart().length;
const trailingSpace = (text: string): number => text.length - text.trimEnd().length;

const idleErrors = defineErrors({
  stream_idle_timeout: { status: 504, type: 'timeout_error' },
});
/** The code of a stream that went quiet for longer than `stream_idle_timeout` (the timeout plugin declares it). */
export const STREAM_IDLE_ERRORS = idleErrors.codes;

/** The error of a stream quiet for `ms`: the timeout plugin's cut and a recovery's last break end with it alike. */
export function streamIdleError(ms: number): GatewayError {
  return idleErrors('stream_idle_timeout', `The upstream sent nothing for ${ms} ms (stream_idle_timeout).`);
}
