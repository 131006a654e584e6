import type { Deadline } from '../analytics/query.js';
import type { Cursor, GroupBy, GroupColumn, LogFilters } from '../store/repository.js';

/** What a reader thread is started with. */
export interface ReaderData {
  file: string;
  /** The directory of the body segments (store/bodies.ts). */
  bodiesDir: string;
  /** The connection's page cache, KiB. */
  cacheKiB: number;
}

/** A read, as the log routes ask it (the repository's read methods and their arguments). */
export type ReadQuery =
  | { method: 'list'; filters: LogFilters; limit: number; cursor: Cursor | null }
  | { method: 'get'; id: string; workspace: string | undefined }
  | { method: 'groups'; groupBy: GroupBy; columns: readonly GroupColumn[]; filters: LogFilters; limit: number; offset: number; deadline: Deadline }
  | { method: 'timeseries'; filters: LogFilters & { from: number; to: number }; bucketMs: number; origin: number; deadline: Deadline };

/** Main thread → reader. */
export type ToReader = { type: 'query'; id: number; query: ReadQuery } | { type: 'close' };

/** Reader → main thread. `timeoutMs` is set when the query ran past its deadline. */
export type FromReader =
  | { type: 'ready' }
  | { type: 'open_failed'; message: string }
  | { type: 'result'; id: number; result: unknown }
  | { type: 'failed'; id: number; message: string; timeoutMs: number | null };
