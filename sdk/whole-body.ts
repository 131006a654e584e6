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
