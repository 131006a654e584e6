import type { LogDropReason, LogQueueStats, Logger } from '../../sdk/index.js';
import { DropWarnings } from './drops.js';
import type { LogEntry } from './entry.js';

/** Why entries were lost. Each is counted separately. */
export type DropReason = LogDropReason;

export interface QueueOptions<T> {
  /** Most entries held (waiting, and the batch being written). */
  maxEntries: number;
  /** Most bytes held, by the caller's size estimate. */
  maxBytes: number;
  /** Entries per write; a write starts as soon as this many wait. */
  batchSize: number;
  /** A write starts at least this often while entries wait. */
  flushIntervalMs: number;
  /** Attempts at one batch before it is dropped (counted as `write_failed`). */
  maxWriteAttempts: number;
  /** At most one warning about drops (and one about failed writes) per this many ms. */
  warnIntervalMs: number;
  write(batch: T[]): Promise<void>;
  logger: Logger;
  now?: () => number;
}

/** The queue's state, in the shape the SDK's `LogStoreStatus.stats()` promises. */
export type QueueStats = LogQueueStats;

/** A bounded log queue and its writer: this in-process `BatchQueue`, or the writer thread's `ThreadSink`. */
export interface LogSink {
  /** Starts writing (the store is open). Entries pushed before wait until then. */
  start(): void;
  /** Queues an entry; false when it was dropped (queue full, or closed). Never blocks, never throws. */
  push(entry: LogEntry, size: number): boolean;
  /** Resolves once everything queued now has been written (or dropped). */
  flush(): Promise<void>;
  /** Stops accepting and writes what is left for up to `timeoutMs`; the rest is counted as dropped (`shutdown`). */
  close(timeoutMs: number): Promise<void>;
  stats(): QueueStats;
}

/**
 * A bounded in-memory queue written in batches by one writer: a batch goes
 * when `batchSize` entries wait or every `flushIntervalMs`, whichever comes
 * first. `push` never waits and never throws: when the queue is full (by
 * count or bytes) the entry is dropped and counted. Entries stay counted in
 * the bound until their batch is written, so the bound also covers the batch
 * in flight. `close` writes everything left.
 */
export class BatchQueue<T> {
  readonly #o: QueueOptions<T>;
  #items: T[] = [];
  #sizes: number[] = [];
  #bytes = 0;
  #writing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #started = false;
  #closed = false;
  #attempts = 0;
  readonly #warnings: DropWarnings;
  readonly #stats = { accepted: 0, written: 0, batches: 0, writeErrors: 0 };

  constructor(options: QueueOptions<T>) {
    this.#o = options;
    this.#warnings = new DropWarnings(
      options.logger,
      options.warnIntervalMs,
      () => ({ depth: this.#items.length, maxEntries: options.maxEntries, maxBytes: options.maxBytes }),
      options.now,
    );
  }

  get depth(): number {
    return this.#items.length;
  }

  stats(): QueueStats {
    return {
      depth: this.#items.length,
      bytes: this.#bytes,
      maxEntries: this.#o.maxEntries,
      maxBytes: this.#o.maxBytes,
      ...this.#stats,
      dropped: this.#warnings.totals(),
    };
  }

  /** Starts writing (the store is open). Entries pushed before wait until then. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#timer = setInterval(() => {
      this.#kick();
      this.#warnings.tick();
    }, this.#o.flushIntervalMs);
    this.#timer.unref();
    if (this.#items.length > 0) this.#kick();
  }

  /** Queues an entry; false when it was dropped because the queue is full. Never blocks. */
  push(item: T, size: number): boolean {
    if (this.#closed || this.#items.length >= this.#o.maxEntries || this.#bytes + size > this.#o.maxBytes) {
      this.#warnings.drop(this.#closed ? 'shutdown' : 'queue_full', 1);
      return false;
    }
    this.#items.push(item);
    this.#sizes.push(size);
    this.#bytes += size;
    this.#stats.accepted++;
    if (this.#items.length >= this.#o.batchSize) this.#kick();
    return true;
  }

  /** Resolves once everything queued now has been written (or dropped). */
  async flush(): Promise<void> {
    while (this.#items.length > 0 && this.#started) {
      this.#kick();
      await this.#writing;
      if (this.#attempts > 0) await delay(Math.min(this.#o.flushIntervalMs, 100));
    }
  }

  /**
   * Stops accepting, then writes what is left for up to `timeoutMs`. Whatever
   * could not be written by then is counted as dropped (`shutdown`) and warned about.
   */
  async close(timeoutMs: number): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    const deadline = (this.#o.now ?? Date.now)() + timeoutMs;
    if (this.#started) {
      while (this.#items.length > 0 && (this.#o.now ?? Date.now)() < deadline) {
        this.#kick();
        await within(this.#writing, deadline - (this.#o.now ?? Date.now)());
        if (this.#attempts > 0 && this.#items.length > 0) await delay(Math.min(100, Math.max(0, deadline - (this.#o.now ?? Date.now)())));
      }
    }
    this.#closed = true;
    const left = this.#items.length;
    if (left > 0) {
      this.#items = [];
      this.#sizes = [];
      this.#bytes = 0;
      this.#warnings.drop('shutdown', left);
    }
    this.#warnings.flush();
  }

  #kick(): void {
    if (this.#writing !== null || !this.#started || this.#items.length === 0) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = null;
    });
  }

  async #drain(): Promise<void> {
    while (this.#items.length > 0) {
      const count = Math.min(this.#o.batchSize, this.#items.length);
      const batch = this.#items.slice(0, count);
      try {
        await this.#o.write(batch);
      } catch (err) {
        this.#stats.writeErrors++;
        this.#attempts++;
        const giveUp = this.#attempts >= this.#o.maxWriteAttempts;
        this.#warnings.writeFailed(err, count, this.#attempts, giveUp);
        if (!giveUp) return; // retried on the next tick
        this.#remove(count);
        this.#attempts = 0;
        this.#warnings.drop('write_failed', count);
        continue;
      }
      this.#attempts = 0;
      this.#remove(count);
      this.#stats.written += count;
      this.#stats.batches++;
    }
  }

  #remove(count: number): void {
    this.#items.splice(0, count);
    for (const s of this.#sizes.splice(0, count)) this.#bytes -= s;
  }
}

/** Waits for `work`, at most `ms` (the timer is cleared when the work ends first). */
async function within(work: Promise<void> | null, ms: number): Promise<void> {
  if (work === null) return;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A timer that keeps the process alive: close and flush must finish before exit. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
