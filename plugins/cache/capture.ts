import type { BodyObserver } from '../../sdk/index.js';

/**
 * Collects an answer's bytes as they go out to the client. Each chunk is only
 * kept (never parsed, never held back); once the body ended cleanly, `done`
 * gets the whole answer on a later turn of the event loop, so assembling and
 * storing it never delays the response. A body that broke off, or grew past
 * `limit` bytes, is dropped.
 */
export function captureObserver(limit: number, done: (bytes: Buffer) => void): BodyObserver {
  let chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  return {
    onChunk(chunk) {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks = [];
        return;
      }
      chunks.push(chunk);
    },
    onEnd(error) {
      if (error !== null || over) return;
      const parts = chunks;
      chunks = [];
      setImmediate(() => done(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)));
    },
  };
}
