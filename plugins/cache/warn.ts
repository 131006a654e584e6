import type { Logger } from '../../sdk/index.js';

/**
 * A warning logged at most once per `intervalMs` (by `now`), so an outage
 * under load is one line a minute rather than one per request. Returns the
 * function to call on each failure.
 */
export function rateLimitedWarning(logger: Logger, message: string, intervalMs: number, now: () => number): (err: unknown) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (err: unknown) => {
    const t = now();
    if (t - last < intervalMs) {
      suppressed++;
      return;
    }
    last = t;
    const fields: Record<string, unknown> = { err: err instanceof Error ? err.message : String(err) };
    if (suppressed > 0) fields.suppressed = suppressed;
    suppressed = 0;
    logger.warn(fields, message);
  };
}
