import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { RequestContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { isBodySource, sourceOf, UpstreamBody, upstreamBodyError, type BodySource, type ChunkSink, type Flow } from '../upstream/body.js';
import type { BodyObserver, GatewayResponse, ResponseBody } from '../types.js';

/**
 * Writes a GatewayResponse to the client and resolves once the response has
 * ended or the connection closed. Streams are pumped chunk by chunk with
 * backpressure; observers see every chunk as it goes out.
 */
export function writeResponse(res: ServerResponse, ctx: RequestContext, response: GatewayResponse): Promise<void> {
  const headers: Record<string, string | string[]> = response.headers;
  for (const name in ctx.responseHeaders) headers[name] = ctx.responseHeaders[name]!;
  ctx.status = response.status;
  const body = response.body;
  const observers = response.observers;

  // The client left before its answer was ready: 'close' has fired already, so waiting for it would never end.
  if (res.destroyed || res.closed) {
    ctx.aborted = true;
    letGo(body);
    notifyEnd(observers, new Error('client closed the connection'));
    return Promise.resolve();
  }

  // An upstream answer that came whole with its headers (most non-stream answers) is written in one go.
  const whole = body instanceof UpstreamBody ? body.take() : null;
  if (whole !== null || body === null || typeof body === 'string' || Buffer.isBuffer(body)) {
    const bytes = whole ?? (body === null ? null : typeof body === 'string' ? Buffer.from(body) : (body as Buffer));
    if (bytes !== null) headers['content-length'] = String(bytes.length);
    else if (response.status !== 204 && response.status !== 304) headers['content-length'] = '0';
    res.writeHead(response.status, headers);
    ctx.firstByteMs = performance.now() - ctx.startedAt;
    if (observers !== null) {
      for (const o of observers) {
        if (bytes !== null) o.onChunk(bytes);
        o.onEnd?.(null);
      }
    }
    return new Promise((resolve) => {
      res.once('close', resolve);
      res.end(bytes);
    });
  }
  return new Promise((resolve) => new BodyWriter(res, ctx, response, headers, resolve).start(body instanceof Readable ? sourceOf(body) : body));
}

/**
 * Writes a streamed body to the client: each chunk pushed by the source is written at once (observers see it
 * first), a full socket pauses the source and its drain resumes it, a client that leaves aborts it (and with it
 * the upstream request). One object per streamed response, its handlers bound once.
 */
class BodyWriter implements ChunkSink {
  readonly #res: ServerResponse;
  readonly #ctx: RequestContext;
  readonly #response: GatewayResponse;
  readonly #headers: Record<string, string | string[]>;
  readonly #observers: BodyObserver[] | null;
  readonly #sse: boolean;
  readonly #resolve: () => void;
  #flow: Flow | null = null;
  #headed = false;
  #started = false;
  #ended = false;

  constructor(res: ServerResponse, ctx: RequestContext, response: GatewayResponse, headers: Record<string, string | string[]>, resolve: () => void) {
    this.#res = res;
    this.#ctx = ctx;
    this.#response = response;
    this.#headers = headers;
    this.#observers = response.observers;
    this.#sse = isEventStream(headers['content-type']);
    this.#resolve = resolve;
  }

  start(source: BodySource): void {
    const res = this.#res;
    // An SSE client gets its headers at once (a failure after them is told in-band). Other bodies send theirs with
    // their first byte, so an upstream that stalls or breaks off before it is still answered with a status and the envelope.
    if (this.#sse) {
      this.#head();
      // writeHead only stores the headers: node sends them with the first write. For an SSE body with no data yet (an MCP
      // server's GET stream, quiet until the server has something to say; a model still thinking) they are flushed on
      // their own at the end of this turn of the event loop, so the client sees its response start. A body whose data is
      // already there (a chat stream's first chunk usually comes with the upstream's headers) sends them with that data,
      // in one write, as before.
      setImmediate(() => {
        if (!this.#started && !res.destroyed && !res.writableEnded) res.flushHeaders();
      });
    }
    res.on('drain', () => this.#flow?.resume());
    res.once('close', () => {
      if (!res.writableFinished) {
        // Client went away: stop the body (and the upstream request behind it) so its connection is freed.
        this.#finish(new Error('client closed the connection'));
        this.#flow?.abort(new Error('client closed the connection'));
      }
      this.#resolve();
    });
    this.#flow = source.start(this);
    if (this.#paused) this.#flow.pause();
  }

  /** A pause asked for while the source flushed its first chunks, before `start` returned the flow. */
  #paused = false;

  data(chunk: Buffer): boolean {
    const ctx = this.#ctx;
    this.#started = true;
    if (!this.#headed) this.#head();
    if (ctx.firstByteMs === null) ctx.firstByteMs = performance.now() - ctx.startedAt;
    const observers = this.#observers;
    if (observers !== null) for (const o of observers) o.onChunk(chunk);
    if (this.#res.write(chunk)) return true;
    if (this.#flow === null) this.#paused = true;
    return false;
  }

  end(error: Error | null): void {
    const res = this.#res;
    if (error === null) {
      this.#finish(null);
      this.#head();
      res.end();
      return;
    }
    if (this.#ended || res.writableEnded || res.destroyed) {
      this.#finish(error);
      return;
    }
    const ctx = this.#ctx;
    const e = upstreamBodyError(error) ?? new GatewayError('upstream_unreachable', 'The upstream connection broke off during the response.');
    ctx.error = e;
    if (!this.#headed) {
      // Nothing reached the client yet: the answer is this error, complete, rather than a reset.
      this.#ended = true;
      notifyEnd(this.#observers, error);
      this.#headed = true;
      const formatted = ctx.route?.errorFormat?.response(e, ctx);
      ctx.status = formatted?.status ?? e.status;
      const bytes = Buffer.from(typeof formatted?.body === 'string' ? formatted.body : JSON.stringify(e.toEnvelope()));
      res.writeHead(ctx.status, { ...ctx.responseHeaders, ...e.headers, 'content-type': 'application/json', 'content-length': String(bytes.length) });
      res.end(bytes);
      return;
    }
    this.#finish(error);
    if (this.#sse) {
      // Headers are gone already: tell an SSE client in-band (in its route's format), then end cleanly so it does not hang.
      const format = ctx.route?.errorFormat;
      res.end(format?.event === undefined ? `data: ${JSON.stringify(e.toEnvelope())}\n\n` : format.event(e, ctx));
    } else {
      res.destroy();
    }
  }

  #head(): void {
    if (this.#headed) return;
    this.#headed = true;
    this.#res.writeHead(this.#response.status, this.#headers);
  }

  #finish(error: Error | null): void {
    if (this.#ended) return;
    this.#ended = true;
    if (error !== null) this.#ctx.aborted = true;
    notifyEnd(this.#observers, error);
  }
}

/** Lets go of a body that will not be written: an upstream's is drained (its connection reused), a stream destroyed. */
function letGo(body: ResponseBody): void {
  if (body instanceof UpstreamBody) body.abort(new Error('client closed the connection'));
  else if (body instanceof Readable) body.destroy();
  else if (isBodySource(body)) body.start({ data: () => false, end: () => undefined }).abort(new Error('client closed the connection'));
}

function notifyEnd(observers: BodyObserver[] | null, error: Error | null): void {
  if (observers === null) return;
  for (const o of observers) o.onEnd?.(error);
}

function isEventStream(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.startsWith('text/event-stream');
}

/**
 * Lets go of a response that will not be sent (a failed attempt before a retry
 * or fallback): a stream is drained, so its keep-alive connection returns to the pool.
 */
export function discardResponse(response: GatewayResponse): void {
  const body = response.body;
  if (body instanceof UpstreamBody) body.discard();
  else if (body instanceof Readable) {
    body.on('error', () => undefined);
    body.resume();
  } else if (isBodySource(body)) body.start({ data: () => true, end: () => undefined });
}

/** Reads a response body whole (bytes, text or a stream), for the few places that must see all of it. */
export async function readResponseBody(body: ResponseBody): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof UpstreamBody) return body.bytes();
  if (body instanceof Readable) {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
    return Buffer.concat(chunks);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.start({
      data: (chunk) => {
        chunks.push(chunk);
        return true;
      },
      end: (error) => (error === null ? resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) : reject(error)),
    });
  });
}

/** A JSON response with the given status. */
export function jsonResponse(status: number, value: unknown, headers: Record<string, string> = {}): GatewayResponse {
  headers['content-type'] = 'application/json';
  return { status, headers, body: JSON.stringify(value), observers: null };
}

/** The response for a gateway error: the envelope and any headers the error carries. */
export function errorResponse(err: GatewayError): GatewayResponse {
  return jsonResponse(err.status, err.toEnvelope(), err.headers ? { ...err.headers } : {});
}
