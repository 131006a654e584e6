/**
 * One line of a newline-delimited JSON stream (NDJSON, JSON Lines), as {@link NDJSONParser} read it:
 * its parsed `value`, or, for a line that has none, the `error` saying why (not JSON, or longer than
 * the parser's limit). Blank lines are skipped, never reported.
 */
export type NDJSONLine = { value: unknown; error?: undefined } | { value?: undefined; error: string };

/** Longest line {@link NDJSONParser} holds by default: 1 MiB. */
export const NDJSON_MAX_LINE_BYTES = 1024 * 1024;

/**
 * An incremental NDJSON reader, for upstreams that stream one JSON value per line
 * (`application/x-ndjson`, `application/jsonl`): feed it the upstream's chunks as they come
 * and it returns the lines each one completed, however the bytes were cut (a multi-byte
 * character split between chunks included). `\n` and `\r\n` end a line; blank lines are
 * skipped. A line is held only until its newline, and one longer than `maxLineBytes` is not
 * held: it is reported once as an error line and skipped to its end.
 *
 * ```ts
 * const lines = new NDJSONParser();
 * for (const line of lines.push(chunk)) {
 *   if (line.error !== undefined) return fail(line.error);
 *   handle(line.value);
 * }
 * // when the upstream ended: lines.end(), the last line if it had no newline
 * ```
 */
export class NDJSONParser {
  readonly #maxLineBytes: number;
  #parts: Buffer[] = [];
  #size = 0;
  #overlong = false;

  constructor(options: { maxLineBytes?: number } = {}) {
    this.#maxLineBytes = options.maxLineBytes ?? NDJSON_MAX_LINE_BYTES;
  }

  /** Feeds a chunk (bytes, or text); returns the lines it completed, in order. */
  push(chunk: Buffer | string): NDJSONLine[] {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const out: NDJSONLine[] = [];
    let start = 0;
    for (let nl = bytes.indexOf(10, start); nl !== -1; nl = bytes.indexOf(10, start)) {
      this.#append(bytes.subarray(start, nl));
      this.#emit(out);
      start = nl + 1;
    }
    // The start of the next line, kept past this call: a copy, as the caller may reuse its buffer.
    if (start < bytes.length) this.#append(Buffer.from(bytes.subarray(start)));
    return out;
  }

  /** The stream ended: the last line, when it had no newline after it. */
  end(): NDJSONLine[] {
    const out: NDJSONLine[] = [];
    if (this.#size > 0) this.#emit(out);
    return out;
  }

  #append(part: Buffer): void {
    this.#size += part.length;
    if (this.#overlong) return;
    if (this.#size > this.#maxLineBytes) {
      this.#overlong = true;
      this.#parts = [];
      return;
    }
    if (part.length > 0) this.#parts.push(part);
  }

  #emit(out: NDJSONLine[]): void {
    const overlong = this.#overlong;
    const bytes = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts);
    this.#parts = [];
    this.#size = 0;
    this.#overlong = false;
    if (overlong) {
      out.push({ error: `a line longer than ${this.#maxLineBytes} bytes` });
      return;
    }
    const text = bytes.toString('utf8');
    if (text.trim() === '') return;
    try {
      out.push({ value: JSON.parse(text) });
    } catch {
      out.push({ error: 'a line that is not JSON' });
    }
  }
}
