import type { LogEntry } from '../entry.js';
import type { FinishOptions } from '../finish.js';

/** What the writer thread is started with. */
export interface WriterData {
  /** The SQLite file (already migrated by the main thread). */
  file: string;
  finish: FinishOptions;
}

/** Main thread → writer. */
export type ToWriter = { type: 'write'; id: number; entries: LogEntry[] } | { type: 'close' };

/** Writer → main thread. `written`/`failed` answer the `write` of the same id. */
export type FromWriter =
  | { type: 'ready' }
  | { type: 'open_failed'; message: string }
  | { type: 'written'; id: number; count: number }
  | { type: 'failed'; id: number; message: string; code: string | null }
  | { type: 'closed' };
