import type { Readable } from 'node:stream';
import { sessionDigest } from './store/store.js';

/**
 * The upstream side of the open GET streams on this instance, by session id:
 * destroyed when their session ends (here, on another instance, or because
 * the gateway is closing), which ends the relay to the client cleanly.
 */
export class SessionStreams {
  readonly #streams = new Map<string, Set<Readable>>();

  get size(): number {
    return this.#streams.size;
  }

  /** The sessions with an open stream. */
  sessionIds(): string[] {
    return [...this.#streams.keys()];
  }

  track(sessionId: string, stream: Readable): void {
    let set = this.#streams.get(sessionId);
    if (set === undefined) this.#streams.set(sessionId, (set = new Set()));
    set.add(stream);
    stream.once('close', () => {
      set.delete(stream);
      if (set.size === 0 && this.#streams.get(sessionId) === set) this.#streams.delete(sessionId);
    });
  }

  close(sessionId: string): void {
    const set = this.#streams.get(sessionId);
    if (set === undefined) return;
    this.#streams.delete(sessionId);
    for (const s of set) s.destroy();
  }

  /** Streams by the session's digest (what the store knows a session by). */
  closeByDigest(digest: string): void {
    for (const id of this.sessionIds()) if (sessionDigest(id) === digest) this.close(id);
  }

  closeAll(): void {
    for (const id of this.sessionIds()) this.close(id);
  }
}
