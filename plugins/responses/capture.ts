import { isObject, SSEParser, wholeBodyObserver, type BodyObserver } from '../../sdk/index.js';

type Json = Record<string, unknown>;

/** Events that carry the whole response object; the last one seen is what is stored. */
const SNAPSHOT_EVENTS = new Set(['response.created', 'response.in_progress', 'response.queued', 'response.completed', 'response.incomplete', 'response.failed']);
const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * Watches a Responses answer as it goes out and hands over the response
 * object once the body ended: a JSON answer parsed whole (up to `limit`
 * bytes), or, for a stream, the object of its last `response.*` event that
 * carries one (`response.completed` normally). A stream that broke off
 * before its terminal event hands over its last snapshot marked `failed`.
 * Nothing is handed over for a body that is not a response object.
 */
export function responseObserver(sse: boolean, limit: number, done: (response: Json) => void): BodyObserver {
  if (!sse) {
    return wholeBodyObserver(limit, (body) => {
      let value: unknown;
      try {
        value = JSON.parse(body.toString('utf8'));
      } catch {
        return;
      }
      if (isObject(value) && value.object === 'response') done(value);
    });
  }
  const parser = new SSEParser();
  const decoder = new TextDecoder();
  let snapshot: Json | null = null;
  let terminal = false;
  const take = (events: { event: string | null; data: string }[]) => {
    for (const e of events) {
      if (terminal || e.event === null || !SNAPSHOT_EVENTS.has(e.event)) continue;
      try {
        const data = JSON.parse(e.data) as Json;
        if (isObject(data.response)) snapshot = data.response;
      } catch {
        continue;
      }
      if (TERMINAL_EVENTS.has(e.event)) terminal = true;
    }
  };
  return {
    onChunk(chunk) {
      if (!terminal) take(parser.push(decoder.decode(chunk, { stream: true })));
    },
    onEnd(error) {
      if (!terminal) take([...parser.push(decoder.decode()), ...parser.end()]);
      if (snapshot === null) return;
      if (!terminal || error !== null) {
        const cut = snapshot as Json;
        if (cut.status === 'in_progress' || cut.status === 'queued' || !terminal) {
          cut.status = 'failed';
          cut.error = { code: 'server_error', message: 'The stream broke off before the response was complete.' };
        }
      }
      done(snapshot);
    },
  };
}
