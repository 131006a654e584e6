import type { FinishOptions } from '../finish.js';
import type { RollupCutoffs } from '../store/repository.js';
import type { PackedEntries } from './pack.js';

/** What the writer thread is started with. */
export interface WriterData {
  /** The SQLite file (already migrated by the main thread). */
  file: string;
  /** The directory of the body segments (store/bodies.ts). */
  bodiesDir: string;
  finish: FinishOptions;
  /** Entries per insert transaction; a write starts as soon as this many wait. */
  batchSize: number;
  /** Otherwise a write starts this long after the first entry arrived, in ms: fewer, larger transactions (each commit writes the WAL). */
  flushIntervalMs: number;
  /** Attempts at one batch before it is dropped. */
  maxWriteAttempts: number;
  /** Wait before a failed batch is tried again, in ms. */
  retryDelayMs: number;
}

/** Main thread → writer. */
export type ToWriter =
  /** Entries to finish and write (pack.ts), with the size the main thread counted each at (so acknowledgements free exactly that). */
  | { type: 'entries'; packed: PackedEntries }
  /** Answer `flushed` once everything sent before this is written or dropped. */
  | { type: 'flush'; id: number }
  /** Delete entries created before `before` (epoch ms; null: none) and rollups past their cut-offs; answer `deleted`. */
  | { type: 'retention'; id: number; before: number | null; rollups: RollupCutoffs }
  /** Write what is left for up to `timeoutMs`, then close the connection and end (what is left is the main thread's to count). */
  | { type: 'close'; timeoutMs: number };

/** What became of entries since the last report. */
export interface Progress {
  written: number;
  writtenBytes: number;
  /** Entries dropped after `maxWriteAttempts` failed attempts. */
  failed: number;
  failedBytes: number;
  batches: number;
  writeErrors: number;
}

/** A failed write attempt: the batch's size, which attempt it was, and whether the batch is dropped now. */
export interface WriteFailure {
  message: string;
  code: string | null;
  entries: number;
  attempt: number;
  givingUp: boolean;
}

/** Writer → main thread. */
export type FromWriter =
  | { type: 'ready' }
  | { type: 'open_failed'; message: string }
  | ({ type: 'progress'; error: WriteFailure | null } & Progress)
  | { type: 'flushed'; id: number }
  | { type: 'deleted'; id: number; deleted: number; error: string | null };

/** What to report when entries could not be handed to the thread at all: all of them failed, in one attempt, given up. */
export function sendFailed(entries: number, bytes: number, err: unknown): { progress: Progress; error: WriteFailure } {
  return {
    progress: { written: 0, writtenBytes: 0, failed: entries, failedBytes: bytes, batches: 0, writeErrors: 1 },
    error: { message: (err as Error).message, code: null, entries, attempt: 1, givingUp: true },
  };
}
