/**
 * JSONL read as it arrives: lines split from chunks with their byte offsets
 * (a batch line is later read back by offset), each line held only until its
 * newline, and a line longer than the limit reported rather than held.
 */

/** A complete line: its bytes (without the newline), 1-based number and byte offset in the file. */
export interface Line {
  bytes: Buffer;
  number: number;
  offset: number;
}

export class LineSplitter {
  #parts: Buffer[] = [];
  #size = 0;
  #offset = 0;
  #number = 0;
  #overlong = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: (line: Line) => void,
    private readonly onOverlong: (number: number) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) break;
      this.#append(chunk.subarray(start, nl));
      this.#emit();
      start = nl + 1;
    }
    if (start < chunk.length) this.#append(chunk.subarray(start));
  }

  /** The last line, when the file does not end with a newline. */
  end(): void {
    if (this.#size > 0 || this.#overlong) this.#emit();
  }

  #append(part: Buffer): void {
    this.#size += part.length;
    if (this.#overlong) return;
    if (this.#size > this.maxLineBytes) {
      this.#overlong = true;
      this.#parts = [];
      return;
    }
    if (part.length > 0) this.#parts.push(Buffer.from(part));
  }

  #emit(): void {
    this.#number++;
    const length = this.#size;
    if (this.#overlong) this.onOverlong(this.#number);
    else this.onLine({ bytes: this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, length), number: this.#number, offset: this.#offset });
    this.#offset += length + 1;
    this.#parts = [];
    this.#size = 0;
    this.#overlong = false;
  }
}

/** A line's bytes without a trailing CR, or null when it is blank (blank lines are allowed and skipped). */
export function lineText(bytes: Buffer): string | null {
  const text = bytes.toString('utf8');
  return text.trim() === '' ? null : text;
}

/** Methods and paths a batch line may use (OpenAI's `url` of an input line). */
export interface BatchLine {
  custom_id: string;
  method: string;
  url: string;
  body: Record<string, unknown>;
}

const MAX_CUSTOM_ID = 512;

/**
 * What is wrong with one parsed line of a batch input file, or null.
 * `endpoint`, when given, is the batch's: every line must name it.
 * `seen` collects custom ids (each must be unique in the file).
 */
export function batchLineProblem(value: unknown, seen: Set<string>, endpoint: string | null): { message: string; param: string } | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { message: 'must be a JSON object with custom_id, method, url and body', param: 'line' };
  const o = value as Record<string, unknown>;
  if (typeof o.custom_id !== 'string' || o.custom_id === '') return { message: 'custom_id must be a non-empty string', param: 'custom_id' };
  if (o.custom_id.length > MAX_CUSTOM_ID) return { message: `custom_id must be at most ${MAX_CUSTOM_ID} characters`, param: 'custom_id' };
  if (seen.has(o.custom_id)) return { message: `custom_id "${o.custom_id.slice(0, 64)}" appears twice`, param: 'custom_id' };
  if (o.method !== 'POST') return { message: 'method must be "POST"', param: 'method' };
  if (typeof o.url !== 'string' || !o.url.startsWith('/')) return { message: 'url must be a path such as /v1/chat/completions', param: 'url' };
  if (endpoint !== null && o.url !== endpoint) return { message: `url "${o.url.slice(0, 64)}" is not the batch's endpoint ${endpoint}`, param: 'url' };
  if (o.body === null || typeof o.body !== 'object' || Array.isArray(o.body)) return { message: 'body must be a JSON object', param: 'body' };
  if ((o.body as Record<string, unknown>).stream === true) return { message: 'body.stream must not be true: batch answers are not streamed', param: 'body.stream' };
  seen.add(o.custom_id);
  return null;
}

/** What is wrong with one line of a fine-tuning file, or null: each line is a JSON object (the provider checks the rest). */
export function fineTuneLineProblem(value: unknown): { message: string; param: string } | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { message: 'must be a JSON object (e.g. {"messages": [...]})', param: 'line' };
  return null;
}
