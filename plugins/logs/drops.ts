import type { LogDropReason, Logger } from '../../sdk/index.js';

/**
 * Counts lost log entries by reason and says so in the log without flooding
 * it: at most one warning about drops, and one about failed writes, per
 * interval (a drop warning carries the count since the last one).
 */
export class DropWarnings {
  readonly #dropped: Record<LogDropReason, number> = { queue_full: 0, write_failed: 0, shutdown: 0 };
  #unwarned = 0;
  #warnedAt = -Infinity;
  #errorWarnedAt = -Infinity;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs: number,
    private readonly state: () => { depth: number; maxEntries: number; maxBytes: number },
    private readonly now: () => number = Date.now,
  ) {}

  totals(): Record<LogDropReason, number> {
    return { ...this.#dropped };
  }

  drop(reason: LogDropReason, count: number): void {
    this.#dropped[reason] += count;
    this.#unwarned += count;
    this.#warn(false);
  }

  /** A write attempt failed (`entries` in the batch; dropped when `givingUp`). */
  writeFailed(error: unknown, entries: number, attempt: number, givingUp: boolean): void {
    const now = this.now();
    if (now - this.#errorWarnedAt < this.intervalMs) return;
    this.#errorWarnedAt = now;
    this.logger.warn({ err: error, entries, attempt, giving_up: givingUp }, 'log store: writing a batch of log entries failed');
  }

  /** A warning now if anything was dropped since the last one; `flush` ignores the interval (close). */
  tick(): void {
    this.#warn(false);
  }

  flush(): void {
    this.#warn(true);
  }

  #warn(force: boolean): void {
    if (this.#unwarned === 0) return;
    const now = this.now();
    if (!force && now - this.#warnedAt < this.intervalMs) return;
    this.#warnedAt = now;
    const s = this.state();
    this.logger.warn(
      { dropped: this.#unwarned, dropped_total: { ...this.#dropped }, depth: s.depth, max_entries: s.maxEntries, max_bytes: s.maxBytes },
      'log store: log entries were dropped (queue full, store too slow or failing, or shutdown); see gateway_log_dropped_total',
    );
    this.#unwarned = 0;
  }
}
