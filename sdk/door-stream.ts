import { GatewayError, mapChunks, readResponseBody, toSource, type GatewayResponse } from '../core/index.js';

/**
 * Turns one stream format into another as it flows (a chat completions
 * stream into a front door's events). Each method returns the text to send.
 */
export interface DoorStreamTranslator {
  /** Events sent before any upstream byte (e.g. `response.created`). */
  start(): string;
  /** A chunk of the upstream stream as it arrived (any boundary): the events it completes. */
  push(chunk: Buffer): string;
  /** The upstream ended cleanly: whatever closes the stream. */
  end(): string;
  /** The upstream broke off: the stream's own error events, so the client sees a complete stream. */
  fail(message: string): string;
}

/** Response headers that describe the body being replaced. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'etag']);

/** An answer's headers without those describing its body (rate limits, request ids and retry hints stay). */
export function headersWithout(headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) if (!BODY_HEADERS.has(name)) out[name] = headers[name]!;
  return out;
}

/**
 * An answer whose body stream is translated chunk by chunk: nothing is held
 * back or read whole, and backpressure flows through. The answer's own
 * observers (usage readers of the adapter) still see every upstream chunk.
 * If the upstream breaks off, the translator's failure events end the
 * stream cleanly instead of a reset.
 */
export function translateStream(answer: GatewayResponse, translator: DoorStreamTranslator): GatewayResponse {
  const observers = answer.observers;
  const body = mapChunks(toSource(answer.body), {
    start: () => translator.start(),
    push(chunk) {
      if (observers !== null) for (const o of observers) o.onChunk(chunk);
      return translator.push(chunk);
    },
    end() {
      if (observers !== null) for (const o of observers) o.onEnd?.(null);
      return translator.end();
    },
    fail(err) {
      if (observers !== null) for (const o of observers) o.onEnd?.(err);
      // Ends the translated stream with the translator's failure events.
      return translator.fail('The upstream connection broke off during the response.');
    },
  });
  const headers = headersWithout(answer.headers);
  headers['content-type'] = 'text/event-stream; charset=utf-8';
  headers['cache-control'] = 'no-cache';
  return { status: answer.status, headers, body, observers: null };
}

/**
 * An answer's body read whole and parsed as JSON (a translated non-stream
 * answer), its observers fed the bytes as if they had gone out. A body that
 * is not JSON is a 502.
 */
export async function readAnswerJson(answer: GatewayResponse): Promise<unknown> {
  const bytes = await readResponseBody(answer.body);
  if (answer.observers !== null) {
    for (const o of answer.observers) {
      o.onChunk(bytes);
      o.onEnd?.(null);
    }
  }
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new GatewayError('upstream_invalid_response', `The upstream answered ${answer.status} with a body that is not JSON.`);
  }
}

/** Whether an answer says it is an event stream (`content-type: text/event-stream`), whatever its body. */
export function hasEventStreamType(answer: GatewayResponse): boolean {
  const type = answer.headers['content-type'];
  const value = Array.isArray(type) ? type[0] : type;
  return typeof value === 'string' && value.toLowerCase().startsWith('text/event-stream');
}

/** Whether an answer is an SSE stream still flowing (not one already read whole). */
export function isEventStream(answer: GatewayResponse): boolean {
  return hasEventStreamType(answer) && answer.body !== null && typeof answer.body === 'object' && !Buffer.isBuffer(answer.body);
}
