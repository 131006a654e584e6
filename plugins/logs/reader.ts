import type { LogRepository } from './store/repository.js';
import { QueryTimeoutError, type Deadline } from './analytics/query.js';

/** The log's read side, as the log and analytics routes use it: the repository's read methods. */
export type LogReader = Pick<LogRepository, 'list' | 'get' | 'groups' | 'timeseries'>;

export { QueryTimeoutError };

/** The deadline of a query started now under a time limit (ms). */
export function deadlineIn(limitMs: number): Deadline {
  return { at: Date.now() + limitMs, limitMs };
}
