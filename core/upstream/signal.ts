/**
 * What undici reads of a signal: `aborted`, `reason`, and `abort` listeners
 * added and removed. A real AbortController costs an EventTarget and its
 * listener bookkeeping on every request (a few µs, measured in the
 * profile); this is an array that is usually empty. Only the transport hands
 * it to undici; plugins get a real AbortSignal from `ctx.signal`.
 */
export interface UpstreamSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: unknown): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** An UpstreamSignal fired by its owner (the request context, when the client goes away). */
export class LightSignal implements UpstreamSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    if (listeners === null) return;
    const i = listeners.indexOf(listener);
    if (i !== -1) listeners.splice(i, 1);
  }

  /** Sets `aborted` and calls each listener once, as AbortController.abort does. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.#listeners;
    this.#listeners = null;
    if (listeners !== null) for (const listener of listeners) listener();
  }
}
