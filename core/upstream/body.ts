import { Readable } from 'node:stream';
import { GatewayError } from '../errors.js';
import { errors as undiciErrors } from './undici.js';

/*
 * Bodies pushed chunk by chunk (gateway plugin API 2.0).
 *
 * An upstream's answer used to be a Node Readable: undici pushed each chunk into the Readable's buffer, and the
 * gateway read it out again through 'data' events, a Transform per translation and a pipe to the client, each a
 * hop with its own buffer, state machine and ticks. The answer is now pushed straight from undici's handler to
 * its one consumer: the client's socket for a pass-through, a translator, or a collector for an answer read
 * whole. Backpressure goes back the same way (the consumer answers false, or pauses its Flow; undici stops
 * reading the socket). See docs/plugins.md, "Upstream bodies".
 */

/** Where a body's chunks go, pushed as they arrive. */
export interface ChunkSink {
  /** One chunk of the body. Return `false` to pause the flow until {@link Flow.resume}; anything else keeps it going. */
  data(chunk: Buffer): boolean | void;
  /** The body ended: `error` is null when it is complete, else why it broke off (or was aborted). Called exactly once. */
  end(error: Error | null): void;
}

/** Control over a started body: backpressure and cancellation. */
export interface Flow {
  /** Stops the chunks until {@link resume} (the upstream's socket is no longer read). */
  pause(): void;
  /** Lets chunks flow again after {@link pause} or a `false` from {@link ChunkSink.data}. */
  resume(): void;
  /** Stops the body for good: the upstream request is aborted and the sink's `end` gets `reason`. */
  abort(reason?: Error): void;
}

/**
 * A body whose chunks are pushed to one consumer: an upstream's answer ({@link UpstreamBody}), a translation
 * of one ({@link mapChunks}), or a Readable adapted ({@link sourceOf}). One-shot: `start` is called once.
 */
export interface BodySource {
  /** Starts the flow of chunks into `sink`; chunks that arrived already are pushed first (perhaps at once). */
  start(sink: ChunkSink): Flow;
}

/** Whether a value is a {@link BodySource} (not bytes, text, a Readable or null). */
export function isBodySource(body: unknown): body is BodySource {
  return typeof body === 'object' && body !== null && typeof (body as BodySource).start === 'function' && !(body instanceof Readable);
}

/** Largest upstream answer read whole (bytes, text, JSON) unless the caller gives its own limit. */
export const MAX_UPSTREAM_BODY_BYTES = 32 * 1024 * 1024;

/** Bytes held for a consumer that has not started yet, before the upstream's socket is paused. */
const HELD_BEFORE_START = 256 * 1024;

/** What undici's dispatch controller offers a handler (undici 7's new handler API). */
export interface DispatchController {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

const NO_FLOW: Flow = { pause() {}, resume() {}, abort() {} };

/**
 * An upstream answer's body, as the upstream client's dispatch handler receives it. Read it once: whole
 * ({@link bytes}, {@link text}, {@link json}), chunk by chunk ({@link start}), as a Node stream for a
 * library that wants one ({@link readable}), or let it go ({@link discard}) so its connection returns to
 * the pool. It is not a Readable: the Readable methods a plugin written for plugin API 1.x calls throw an
 * error naming what to call instead.
 */
export class UpstreamBody implements BodySource, Flow {
  /** The answer's status (for error messages). */
  readonly status: number;
  #controller: DispatchController | null;
  /** Chunks that arrived before the consumer started, or while it is paused. */
  #held: Buffer[] | null = null;
  #heldBytes = 0;
  #sink: ChunkSink | null = null;
  #paused = false;
  /** The upstream finished sending (complete, or failed with `#error`). */
  #finished = false;
  #error: Error | null = null;
  /** The sink's `end` has been called. */
  #done = false;

  /** @internal Built by the upstream client; plugins receive it as `UpstreamResponse.body`. */
  constructor(status: number, controller: DispatchController | null) {
    this.status = status;
    this.#controller = controller;
  }

  /** An answer whose whole body is already known (tests, a cached or synthesized answer). */
  static of(status: number, body: Buffer | string | null): UpstreamBody {
    const b = new UpstreamBody(status, null);
    if (body !== null && body.length > 0) b.push(typeof body === 'string' ? Buffer.from(body) : body);
    b.finish(null);
    return b;
  }

  /**
   * A body over chunks from elsewhere (a Node stream, an array, a generator): a test's upstream answer, or a
   * plugin's answer built from a stream. Started at once; held until read.
   */
  static from(chunks: Readable | Iterable<Buffer | string> | AsyncIterable<Buffer | string>, status = 200): UpstreamBody {
    const readable = chunks instanceof Readable ? chunks : Readable.from(chunks, { objectMode: false });
    return UpstreamBody.started(status, sourceOf(readable));
  }

  /**
   * A body that starts `source` now and holds what it pushes until a reader starts it; `onFirst` is called
   * once, when the first chunk (or the end) arrives. For a check that must see a stream begin before the
   * answer is handed on (a timeout waiting for the first chunk).
   */
  static started(status: number, source: BodySource, onFirst: () => void = () => undefined): UpstreamBody {
    let flow: Flow | null = null;
    const body = new UpstreamBody(status, {
      pause: () => flow?.pause(),
      resume: () => flow?.resume(),
      abort: (reason) => flow?.abort(reason),
    });
    let first = true;
    flow = source.start({
      data(chunk) {
        if (first) {
          first = false;
          onFirst();
        }
        return body.push(chunk);
      },
      end(error) {
        if (first) {
          first = false;
          onFirst();
        }
        body.finish(error);
      },
    });
    return body;
  }

  /** @internal A chunk from the upstream. Returns false when the upstream should pause. */
  push(chunk: Buffer): boolean {
    if (this.#done) return false;
    const sink = this.#sink;
    if (sink !== null && !this.#paused && this.#held === null) {
      if (sink.data(chunk) === false) {
        this.#paused = true;
        return false;
      }
      return !this.#paused;
    }
    (this.#held ??= []).push(chunk);
    this.#heldBytes += chunk.length;
    // Unstarted: a small answer is held whole (it usually arrives with its headers); a large one waits for its reader.
    return sink === null ? this.#heldBytes < HELD_BEFORE_START : false;
  }

  /** @internal The upstream finished: complete (`error` null) or broken off. */
  finish(error: Error | null): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#error = error;
    this.#controller = null;
    if (this.#sink !== null && (error !== null || (this.#held === null && !this.#paused))) this.#end(error);
  }

  start(sink: ChunkSink): Flow {
    if (this.#sink !== null) throw new Error('This upstream body was read already: a body is read once.');
    this.#sink = sink;
    if (this.#finished && this.#error !== null) {
      this.#held = null;
      this.#end(this.#error);
      return this;
    }
    this.#flush();
    return this;
  }

  pause(): void {
    if (this.#done) return;
    this.#paused = true;
    this.#controller?.pause();
  }

  resume(): void {
    // Plugin API 1.x drained a body with `body.resume()`; on an unstarted body that would now wait forever.
    if (this.#sink === null) throw new TypeError(oldContractMessage('.resume() before the body was started'));
    if (this.#done) return;
    this.#paused = false;
    this.#flush();
  }

  abort(reason: Error = new Error('The upstream body was aborted.')): void {
    if (this.#done) return;
    this.#held = null;
    const controller = this.#controller;
    if (controller !== null && !this.#finished) {
      // undici answers with onResponseError(reason), which ends the sink through finish().
      controller.abort(reason);
      if (this.#done) return;
    }
    this.#finished = true;
    this.#error = reason;
    if (this.#sink === null) this.#sink = IGNORE;
    this.#end(reason);
  }

  /** Pushes what was held while unstarted or paused, then lets the upstream flow (or ends, when it finished). */
  #flush(): void {
    const sink = this.#sink!;
    const held = this.#held;
    if (held !== null) {
      let i = 0;
      while (i < held.length) {
        const chunk = held[i++]!;
        this.#heldBytes -= chunk.length;
        if (sink.data(chunk) === false || this.#paused) {
          this.#paused = true;
          if (this.#done) return;
          this.#held = i < held.length ? held.slice(i) : null;
          if (this.#held === null && this.#finished) this.#end(this.#error);
          return;
        }
        if (this.#done) return;
      }
      this.#held = null;
    }
    if (this.#finished) this.#end(this.#error);
    else this.#controller?.resume();
  }

  #end(error: Error | null): void {
    if (this.#done) return;
    this.#done = true;
    this.#held = null;
    this.#sink!.end(error);
  }

  /**
   * The whole body as one Buffer. A body over `limit` bytes is a 502 (`upstream_invalid_response`); one that
   * stalls past the body timeout a 504, one whose connection broke off a 502.
   */
  bytes(limit = MAX_UPSTREAM_BODY_BYTES): Promise<Buffer> {
    // The usual small answer arrived with its headers: no promise machinery beyond the one returned.
    if (this.#sink === null && this.#finished && this.#error === null) {
      const held = this.#held;
      const bytes = held === null ? EMPTY : held.length === 1 ? held[0]! : Buffer.concat(held, this.#heldBytes);
      if (bytes.length > limit) return Promise.reject(tooLarge(limit));
      this.start(IGNORE);
      return Promise.resolve(bytes);
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      this.start({
        data: (chunk) => {
          size += chunk.length;
          if (size > limit) {
            over = true;
            this.abort(tooLarge(limit));
            return false;
          }
          chunks.push(chunk);
          return true;
        },
        end: (error) => {
          if (over) reject(tooLarge(limit));
          else if (error !== null) reject(upstreamBodyError(error) ?? error);
          else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
        },
      });
    });
  }

  /** The whole body decoded as UTF-8 (limits and errors as {@link bytes}). */
  async text(limit = MAX_UPSTREAM_BODY_BYTES): Promise<string> {
    return (await this.bytes(limit)).toString('utf8');
  }

  /** The whole body parsed as JSON; a body that is not JSON is a 502 (never quoting the bytes). */
  async json(limit = MAX_UPSTREAM_BODY_BYTES): Promise<unknown> {
    const text = await this.text(limit);
    try {
      return JSON.parse(text);
    } catch {
      throw new GatewayError('upstream_invalid_response', `The upstream answered ${this.status} with a body that is not JSON.`);
    }
  }

  /**
   * The whole body when it has arrived complete and is still unread (the usual small answer: it came with
   * its headers), taking it; else null, and the body is left as it was.
   */
  take(): Buffer | null {
    const held = this.#held;
    if (this.#sink !== null || !this.#finished || this.#error !== null || held === null) return null;
    const bytes = held.length === 1 ? held[0]! : Buffer.concat(held, this.#heldBytes);
    this.#held = null;
    this.#heldBytes = 0;
    this.#sink = IGNORE;
    this.#end(null);
    return bytes;
  }

  /** Lets the body go unread: it is drained, so its keep-alive connection returns to the pool. Safe to call twice. */
  discard(): void {
    if (this.#sink === null) this.start(IGNORE);
  }

  /**
   * The body as a Node Readable, for a library that takes a stream (an SDK's fetch, a file upload). Costs what
   * a Readable costs; the gateway's own paths use {@link start} or {@link bytes}.
   */
  readable(): Readable {
    let flow: Flow = NO_FLOW;
    const out = new Readable({
      read: () => flow.resume(),
      destroy: (err, done) => {
        flow.abort(err ?? new Error('The reader closed the upstream body.'));
        done(err);
      },
    });
    flow = this.start({
      data: (chunk) => out.push(chunk),
      end: (error) => {
        if (error === null) out.push(null);
        else if (!out.destroyed) out.destroy(upstreamBodyError(error) ?? error);
      },
    });
    return out;
  }
}

const EMPTY = Buffer.alloc(0);
const IGNORE: ChunkSink = { data: () => true, end: () => undefined };

function tooLarge(limit: number): GatewayError {
  return new GatewayError('upstream_invalid_response', `The upstream answer is larger than ${limit} bytes.`);
}

// Plugin API 1.x read `UpstreamResponse.body` as a Readable. Those calls now throw at once, naming the new
// calls, rather than fail later in a way that does not say why (or, worse, wait for an event that never comes).
const OLD_READABLE_CALLS = ['pipe', 'on', 'once', 'addListener', 'read', 'resume', 'destroy', 'setEncoding', 'unpipe'] as const;
for (const name of OLD_READABLE_CALLS) {
  if (name === 'resume') continue; // a Flow method: resume after pause
  Object.defineProperty(UpstreamBody.prototype, name, {
    value() {
      throw new TypeError(oldContractMessage(`.${name}()`));
    },
    configurable: true,
  });
}
Object.defineProperty(UpstreamBody.prototype, Symbol.asyncIterator, {
  value() {
    throw new TypeError(oldContractMessage('for await … of'));
  },
  configurable: true,
});

function oldContractMessage(call: string): string {
  return (
    `UpstreamResponse.body is no longer a Readable stream (gateway plugin API 2.0), so ${call} is not available: ` +
    'read it whole with `await body.bytes()`, `body.text()` or `body.json()`; take its chunks as they arrive with ' +
    '`body.start({ data, end })`; let it go with `body.discard()`; or, for a library that needs a stream, `body.readable()`. ' +
    'See docs/plugins.md, "Upstream bodies".'
  );
}

/**
 * A {@link BodySource} over a Node Readable (a plugin's local answer, a file): the gateway's consumers take
 * every streamed body as a source.
 */
export function sourceOf(body: Readable): BodySource {
  return {
    start(sink: ChunkSink): Flow {
      let done = false;
      const end = (error: Error | null) => {
        if (done) return;
        done = true;
        sink.end(error);
      };
      body.on('data', (chunk: Buffer | string) => {
        if (sink.data(typeof chunk === 'string' ? Buffer.from(chunk) : chunk) === false) body.pause();
      });
      body.once('end', () => end(null));
      body.once('error', (err: Error) => end(err));
      body.once('close', () => {
        if (!body.readableEnded) end(new Error('The body stream closed before its end.'));
      });
      return {
        pause: () => body.pause(),
        resume: () => body.resume(),
        abort: (reason) => {
          end(reason ?? new Error('The body was aborted.'));
          body.destroy();
        },
      };
    },
  };
}

/**
 * Any response body as a {@link BodySource}: a source as it is, a Readable adapted, bytes or text as one chunk,
 * null as an empty body.
 */
export function toSource(body: Buffer | string | BodySource | Readable | null): BodySource {
  if (body instanceof Readable) return sourceOf(body);
  if (body !== null && typeof body === 'object' && !Buffer.isBuffer(body)) return body;
  return UpstreamBody.of(200, body);
}

/** What {@link mapChunks} makes of each part of a body. An empty result sends nothing. */
export interface ChunkMap {
  /** What to send before the source's first chunk (an opening event). */
  start?(): Buffer | string;
  /** What to send for one chunk of the source. A throw fails the body with that error. */
  push(chunk: Buffer): Buffer | string;
  /** What to send when the source ended cleanly (a tail, a closing event). */
  end(): Buffer | string;
  /**
   * What to send when the source broke off, ending the body cleanly (a stream's own error event), or null to
   * pass the failure on. Absent: passed on.
   */
  fail?(error: Error): Buffer | string | null;
}

/**
 * A body made chunk by chunk from another (a translation between stream formats): each chunk is mapped and
 * pushed on at once, nothing is buffered, and backpressure and cancellation reach the source.
 */
export function mapChunks(source: BodySource, map: ChunkMap): BodySource {
  return {
    start(sink: ChunkSink): Flow {
      let flow: Flow | null = null;
      // A push that throws while the source flushes what it held (inside source.start) has no flow to abort yet.
      let failure: Error | null = null;
      let done = false;
      const end = (error: Error | null) => {
        if (done) return;
        done = true;
        sink.end(error);
      };
      const send = (out: Buffer | string): boolean | void => (out.length === 0 ? true : sink.data(typeof out === 'string' ? Buffer.from(out) : out));
      if (map.start !== undefined) send(map.start());
      flow = source.start({
        data(chunk) {
          if (done || failure !== null) return false;
          let out: Buffer | string;
          try {
            out = map.push(chunk);
          } catch (err) {
            failure = err as Error;
            if (flow !== null) flow.abort(failure);
            return false;
          }
          return send(out);
        },
        end(error) {
          if (done) return;
          if (failure !== null) return end(failure);
          let out: Buffer | string | null;
          try {
            out = error === null ? map.end() : map.fail === undefined ? null : map.fail(error);
          } catch (err) {
            return end(err as Error);
          }
          if (out === null) return end(error);
          send(out);
          end(null);
        },
      });
      if (failure !== null) flow.abort(failure);
      return flow;
    },
  };
}

/**
 * The gateway error for an upstream body that failed while it was read (after the headers came): no data for
 * `upstreamBodyTimeoutMs` is a 504, a connection that broke off a 502. Null for anything else (a client that
 * went away, a bug), which the caller handles as before.
 */
export function upstreamBodyError(err: unknown): GatewayError | null {
  if (err instanceof GatewayError) return err;
  if (err instanceof undiciErrors.BodyTimeoutError) {
    return new GatewayError('upstream_timeout', 'The upstream stopped sending its answer: no data within the body timeout (upstream.bodyTimeoutMs).', { cause: err });
  }
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') return null;
  if (err instanceof undiciErrors.UndiciError || (err as { code?: string })?.code === 'ECONNRESET') {
    return new GatewayError('upstream_unreachable', 'The upstream connection broke off during the answer.', { cause: err });
  }
  return null;
}
