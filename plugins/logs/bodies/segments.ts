import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/*
 * The body segments of an SQLite log store: append-only files beside the
 * database (`<file>.bodies/`), each a run of blocks, one block per written
 * batch: a 4-byte length, then the batch's bodies as one JSON array,
 * deflated. A row points at its body with `<segment>:<offset>:<length>:<index>`.
 * A segment is closed at SEGMENT_BYTES and a new one started; retention deletes
 * whole segments last written before its cut-off (every entry in them is older).
 *
 * Used on the writer thread (appends) and the reader threads (reads): all of
 * it synchronous I/O, which is what those threads are for.
 */

/** Where a segment is closed and the next one started. */
const SEGMENT_BYTES = 64 * 1024 * 1024;
/** zlib level 1: most of the saving on JSON text at a fraction of the default level's CPU. */
const LEVEL = 1;

export class BodySegments {
  readonly dir: string;
  #name: string | null = null;
  #fd: number | null = null;
  #size = 0;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  /** Appends one block holding `bodies` (one per entry, in order); returns each entry's reference. */
  append(bodies: readonly unknown[]): string[] {
    const block = deflateRawSync(Buffer.from(JSON.stringify(bodies)), { level: LEVEL });
    if (this.#fd === null || this.#size + block.length + 4 > SEGMENT_BYTES) this.#open();
    const header = Buffer.allocUnsafe(4);
    header.writeUInt32BE(block.length, 0);
    const offset = this.#size;
    writeSync(this.#fd!, header, 0, 4, offset);
    writeSync(this.#fd!, block, 0, block.length, offset + 4);
    this.#size += 4 + block.length;
    const prefix = `${this.#name}:${offset}:${block.length}:`;
    return bodies.map((_, i) => prefix + i);
  }

  /** The body a reference points at, or null when its segment is gone (retention) or it cannot be read. */
  read(ref: string): unknown {
    const [name, offset, length, index] = ref.split(':');
    if (name === undefined || !/^seg-\d+-\d+\.dat$/.test(name)) return null;
    let fd: number;
    try {
      fd = openSync(join(this.dir, name), 'r');
    } catch {
      return null;
    }
    try {
      const block = Buffer.allocUnsafe(Number(length));
      if (readSync(fd, block, 0, block.length, Number(offset) + 4) !== block.length) return null;
      return (JSON.parse(inflateRawSync(block).toString('utf8')) as unknown[])[Number(index)] ?? null;
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Deletes the segments last written before `before` (epoch ms), except the one being written; returns how many. */
  deleteBefore(before: number): number {
    let deleted = 0;
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.dat') || name === this.#name) continue;
      const path = join(this.dir, name);
      try {
        if (statSync(path).mtimeMs < before) {
          unlinkSync(path);
          deleted++;
        }
      } catch {
        /* gone meanwhile */
      }
    }
    return deleted;
  }

  close(): void {
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  #open(): void {
    this.close();
    // Named by the time it was started, and a counter so two in one millisecond differ; never reopened for writing.
    let n = 0;
    do this.#name = `seg-${Date.now()}-${n++}.dat`;
    while (existsSync(join(this.dir, this.#name)));
    this.#fd = openSync(join(this.dir, this.#name), 'wx');
    this.#size = 0;
  }
}
