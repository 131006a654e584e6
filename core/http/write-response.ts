import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { RequestContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { upstreamBodyError } from '../upstream/client.js';
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
    if (body instanceof Readable) body.destroy();
    notifyEnd(observers, new Error('client closed the connection'));
    return Promise.resolve();
  }

  if (!(body instanceof Readable)) {
    const bytes = body === null ? null : typeof body === 'string' ? Buffer.from(body) : body;
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

  const sse = isEventStream(headers['content-type']);
  // An SSE client gets its headers at once (a failure after them is told in-band). Other bodies send theirs with
  // their first byte, so an upstream that stalls or breaks off before it is still answered with a status and the envelope.
  let headed = false;
  const head = () => {
    if (headed) return;
    headed = true;
    res.writeHead(response.status, headers);
  };
  if (sse) head();
  // writeHead only stores the headers: node sends them with the first write. For an SSE body with no data yet (an MCP
  // server's GET stream, quiet until the server has something to say; a model still thinking) they are flushed on
  // their own at the end of this turn of the event loop, so the client sees its response start. A body whose data is
  // already there (a chat stream's first chunk usually comes with the upstream's headers) sends them with that data,
  // in one write, as before.
  let started = false;
  if (sse) {
    setImmediate(() => {
      if (!started && !res.destroyed && !res.writableEnded) res.flushHeaders();
    });
  }
  return new Promise((resolve) => {
    let ended = false;
    const finish = (error: Error | null) => {
      if (ended) return;
      ended = true;
      if (error !== null) ctx.aborted = true;
      notifyEnd(observers, error);
    };
    body.on('data', (chunk: Buffer) => {
      started = true;
      head();
      if (ctx.firstByteMs === null) ctx.firstByteMs = performance.now() - ctx.startedAt;
      if (observers !== null) for (const o of observers) o.onChunk(chunk);
      if (!res.write(chunk)) body.pause();
    });
    res.on('drain', () => body.resume());
    body.on('end', () => {
      finish(null);
      head();
      res.end();
    });
    body.on('error', (err: Error) => {
      if (res.writableEnded || res.destroyed) {
        finish(err);
        return;
      }
      const e = upstreamBodyError(err) ?? new GatewayError('upstream_unreachable', 'The upstream connection broke off during the response.');
      ctx.error = e;
      if (!headed) {
        // Nothing reached the client yet: the answer is this error, complete, rather than a reset.
        ended = true;
        notifyEnd(observers, err);
        headed = true;
        const formatted = ctx.route?.errorFormat?.response(e, ctx);
        ctx.status = formatted?.status ?? e.status;
        const bytes = Buffer.from(typeof formatted?.body === 'string' ? formatted.body : JSON.stringify(e.toEnvelope()));
        res.writeHead(ctx.status, { ...ctx.responseHeaders, ...e.headers, 'content-type': 'application/json', 'content-length': String(bytes.length) });
        res.end(bytes);
        return;
      }
      finish(err);
      if (sse) {
        // Headers are gone already: tell an SSE client in-band (in its route's format), then end cleanly so it does not hang.
        const format = ctx.route?.errorFormat;
        res.end(format?.event === undefined ? `data: ${JSON.stringify(e.toEnvelope())}\n\n` : format.event(e, ctx));
      } else {
        res.destroy();
      }
    });
    res.once('close', () => {
      if (!res.writableFinished) {
        // Client went away: stop reading upstream so its connection is freed.
        finish(new Error('client closed the connection'));
        body.destroy();
      }
      resolve();
    });
  });
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
  if (body instanceof Readable) {
    body.on('error', () => undefined);
    body.resume();
  }
}

/** Reads a response body whole (bytes, text or a stream), for the few places that must see all of it. */
export async function readResponseBody(body: ResponseBody): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
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
