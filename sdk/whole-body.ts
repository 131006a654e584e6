import type { BodyObserver } from '../core/index.js';

/**
 * Observes an answer as it is sent and hands `done` the whole body once it
 * ended cleanly, when it was at most `limit` bytes (a larger one is not kept:
 * the observer stops collecting past the limit and hands nothing over).
 */
export function wholeBodyObserver(limit: number, done: (body: Buffer) => void): BodyObserver {
  const chunks: Buffer[] = [];
  let size = 0;
  return {
    onChunk(chunk) {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    },
    onEnd(error) {
      if (error !== null || size > limit) return;
      done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    },
  };
}

/**
 * Observes an answer line by line as it is sent (an SSE stream's usage
 * event): `line` gets each line longer than 8 characters (shorter ones are
 * blank or bare `event:` names, never what a reader looks for), without its
 * newline; the last one at the end. A line that grows past `limit` without
 * ending is dropped. `done` runs when the answer ended.
 */
export function lineObserver(limit: number, line: (text: string) => void, done?: () => void): BodyObserver {
  let partial = '';
  return {
    onChunk(chunk) {
      const text = partial + chunk.toString('utf8');
      let start = 0;
      let nl = text.indexOf('\n');
      while (nl !== -1) {
        if (nl - start > 8) line(text.slice(start, nl));
        start = nl + 1;
        nl = text.indexOf('\n', start);
      }
      partial = start === 0 ? text : text.slice(start);
      if (partial.length > limit) partial = '';
    },
    onEnd() {
      if (partial.length > 8) line(partial);
      partial = '';
      done?.();
    },
  };
}
