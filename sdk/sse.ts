/** One server-sent event: its `event:` name (if any) and its joined `data:` lines. */
export interface SSEEvent {
  /** The `event:` field's value; null when the event had none (the default `message` type). */
  event: string | null;
  /** The `data:` lines, joined with `\n`. */
  data: string;
}

/**
 * An incremental SSE parser (WHATWG framing): accepts `\n`, `\r\n` and `\r`
 * line ends, joins multi-line `data:` fields, skips `:` comment lines, and
 * holds a partial event until its blank line arrives, however the bytes are cut.
 */
export class SSEParser {
  #buffer = '';
  #event: string | null = null;
  #data: string[] = [];

  /** Feeds text; returns the events it completed. */
  push(text: string): SSEEvent[] {
    const out: SSEEvent[] = [];
    let buffer = this.#buffer + text;
    let start = 0;
    if (buffer.indexOf('\r') === -1) {
      // No \r (the usual case): every line ends at a \n, found by the engine's own search rather than a loop here.
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n', start)) {
        this.#line(buffer.slice(start, end), out);
        start = end + 1;
      }
      this.#buffer = buffer.slice(start);
      return out;
    }
    for (;;) {
      let end = -1;
      let next = -1;
      for (let i = start; i < buffer.length; i++) {
        const c = buffer.charCodeAt(i);
        if (c === 10) {
          end = i;
          next = i + 1;
          break;
        }
        if (c === 13) {
          // A lone \r at the end may be the first half of \r\n: wait for more.
          if (i + 1 === buffer.length) break;
          end = i;
          next = buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end === -1) break;
      this.#line(buffer.slice(start, end), out);
      start = next;
    }
    this.#buffer = buffer.slice(start);
    buffer = '';
    return out;
  }

  /**
   * Feeds text and maps each completed event's data through `handle`, joining what it returns;
   * with `last`, also the event the stream ended without a blank line after.
   */
  map(text: string, last: boolean, handle: (data: string) => string): string {
    let out = '';
    for (const e of this.push(text)) out += handle(e.data);
    if (last) for (const e of this.end()) out += handle(e.data);
    return out;
  }

  /** Flushes an event left without its final blank line (a stream that ended abruptly). */
  end(): SSEEvent[] {
    const out: SSEEvent[] = [];
    if (this.#buffer !== '') this.#line(this.#buffer, out);
    this.#buffer = '';
    this.#line('', out);
    return out;
  }

  #line(line: string, out: SSEEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0 || this.#event !== null) out.push({ event: this.#event, data: this.#data.join('\n') });
      this.#event = null;
      this.#data = [];
      return;
    }
    if (line.charCodeAt(0) === 58 /* : */) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
  }
}
