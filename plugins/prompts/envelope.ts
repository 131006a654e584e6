import { mapChunks, toSource, type BodyObserver, type BodySource, type GatewayResponse } from '../../sdk/index.js';

/** Headers that describe the bytes of one body, not the answer: wrong for the envelope, and useless inside it. */
const FRAMING = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

function headerOf(headers: GatewayResponse['headers'], name: string): string {
  const value = headers[name];
  return ((Array.isArray(value) ? value[0] : value) ?? '').toLowerCase();
}

/** Whether an answer gets the envelope: a successful JSON answer (a stream is sent as the chat stream it is; an error keeps the gateway's error body). */
export function wantsEnvelope(response: GatewayResponse): boolean {
  if (response.status < 200 || response.status > 299 || response.body === null) return false;
  if (headerOf(response.headers, 'content-encoding') !== '') return false;
  return headerOf(response.headers, 'content-type').includes('json');
}

function notify(observers: readonly BodyObserver[], error: Error | null): void {
  for (const o of observers) o.onEnd?.(error);
}

/**
 * The spec's answer of a stored-prompt completion: `{"status": "success",
 * "headers": {…}, "body": <the chat completion>}`, where `headers` are the
 * answer's own (without framing headers). The chat completion's bytes are
 * not parsed: they are written between a prefix and a suffix, and a streamed
 * body stays streamed. The observers the answer already had (usage, the
 * cache's store) still see the chat completion's bytes and nothing else, so
 * the cache keeps a plain chat completion, which the chat route can serve too.
 */
export function envelope(response: GatewayResponse): GatewayResponse {
  const inner: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) if (!FRAMING.has(name.toLowerCase())) inner[name.toLowerCase()] = value;
  const head = Buffer.from(`{"status":"success","headers":${JSON.stringify(inner)},"body":`);
  const tail = Buffer.from('}');
  const observers = response.observers ?? [];
  const headers = { ...inner, 'content-type': 'application/json' };
  const body = response.body;
  if (body === null || typeof body === 'string' || Buffer.isBuffer(body)) {
    const bytes = typeof body === 'string' ? Buffer.from(body) : (body ?? Buffer.alloc(0));
    for (const o of observers) o.onChunk(bytes);
    notify(observers, null);
    return { status: response.status, headers, body: Buffer.concat([head, bytes.length === 0 ? Buffer.from('null') : bytes, tail]), observers: null };
  }
  return { status: response.status, headers, body: wrapped(toSource(body), head, tail, observers), observers: null };
}

/**
 * The body between the prefix and the suffix. The prefix goes with the first
 * chunk, so an upstream that fails before its first byte is still answered
 * with an error status (headers go out with the first byte).
 */
function wrapped(body: BodySource, head: Buffer, tail: Buffer, observers: readonly BodyObserver[]): BodySource {
  let first = true;
  return mapChunks(body, {
    push(chunk) {
      for (const o of observers) o.onChunk(chunk);
      if (!first) return chunk;
      first = false;
      return Buffer.concat([head, chunk]);
    },
    end() {
      notify(observers, null);
      return first ? Buffer.concat([head, Buffer.from('null'), tail]) : tail;
    },
    // A failure (or a client that went away) is passed on: the observers hear of it.
    fail(err) {
      notify(observers, err);
      return null;
    },
  });
}
