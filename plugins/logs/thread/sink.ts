import type { Logger } from '../../../sdk/index.js';
import type { LogEntry } from '../entry.js';
import type { RollupCutoffs } from '../store/repository.js';
import { DropWarnings } from '../drops.js';
import type { QueueStats } from '../queue.js';
import { sendFailed, type Progress, type WriteFailure, type WriterData } from './protocol.js';
import { startWriterThread, type WriterThread } from './client.js';

export interface ThreadSinkOptions extends WriterData {
  /** Most entries held: waiting here, and handed to the thread but not yet written. */
  maxEntries: number;
  /** Most bytes held, by the caller's size estimate. */
  maxBytes: number;
  /** At most one warning about drops (and one about failed writes) per this many ms. */
  warnIntervalMs: number;
  logger: Logger;
}

/**
 * Entries are handed to the thread at least this often (or as soon as a batch is full), so they
 * leave the main heap young: held longer, they would survive a scavenge and cost old-space GC.
 */
const HAND_OVER_MS = 10;

/**
 * The log queue when a writer thread does the writing. `push` never waits and
 * never throws; entries go to the thread in small groups and the main thread
 * keeps no reference to them. The thread reports what it wrote or dropped,
 * and until then entries still count against the bound, so memory stays
 * bounded (on both threads) however slow the disk is. Same contract and
 * stats as the in-process `BatchQueue`.
 */
export class ThreadSink {
  readonly #o: ThreadSinkOptions;
  #thread: WriterThread | null = null;
  #pending: LogEntry[] = [];
  #pendingSizes: number[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Entries held: pending here plus handed over and not yet reported. */
  #held = 0;
  #bytes = 0;
  #closed = false;
  readonly #warnings: DropWarnings;
  readonly #stats = { accepted: 0, written: 0, batches: 0, writeErrors: 0 };
  readonly #post = () => this.#handOver();

  constructor(options: ThreadSinkOptions) {
    this.#o = options;
    this.#warnings = new DropWarnings(options.logger, options.warnIntervalMs, () => ({ depth: this.#held, maxEntries: options.maxEntries, maxBytes: options.maxBytes }));
  }

  /** Starts the thread (the store is migrated). Entries pushed before wait until then. */
  async open(): Promise<void> {
    const { file, bodiesDir, finish, batchSize, flushIntervalMs, maxWriteAttempts, retryDelayMs } = this.#o;
    this.#thread = await startWriterThread({ file, bodiesDir, finish, batchSize, flushIntervalMs, maxWriteAttempts, retryDelayMs }, {
      progress: (p, error) => this.#progress(p, error),
      lost: (err) => this.#lost(err),
    });
  }

  start(): void {
    if (this.#pending.length > 0) this.#handOver();
  }

  stats(): QueueStats {
    return {
      depth: this.#held,
      bytes: this.#bytes,
      maxEntries: this.#o.maxEntries,
      maxBytes: this.#o.maxBytes,
      ...this.#stats,
      dropped: this.#warnings.totals(),
    };
  }

  push(entry: LogEntry, size: number): boolean {
    if (this.#closed || this.#held >= this.#o.maxEntries || this.#bytes + size > this.#o.maxBytes) {
      this.#warnings.drop(this.#closed ? 'shutdown' : 'queue_full', 1);
      return false;
    }
    this.#pending.push(entry);
    this.#pendingSizes.push(size);
    this.#held++;
    this.#bytes += size;
    this.#stats.accepted++;
    if (this.#pending.length >= this.#o.batchSize) this.#handOver();
    else if (this.#timer === null && this.#thread !== null) this.#timer = setTimeout(this.#post, HAND_OVER_MS).unref();
    return true;
  }

  /** Deletes entries created before `before` (epoch ms; null: none) and rollups past their cut-offs on the writer thread, off the event loop. */
  deleteBefore(before: number | null, rollups: RollupCutoffs): Promise<number> {
    if (this.#thread === null) return Promise.resolve(0);
    return this.#thread.deleteBefore(before, rollups);
  }

  /** Resolves once everything accepted so far is written or dropped. */
  async flush(): Promise<void> {
    if (this.#thread === null) return;
    this.#handOver();
    await this.#thread.flush();
  }

  /**
   * Writes what is held, and what requests still finishing add meanwhile, then stops accepting and
   * lets the thread end; all within `timeoutMs`. Whatever was not written by then is counted as
   * dropped (`shutdown`) and warned about.
   */
  async close(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    if (this.#thread !== null) {
      // Entries keep coming while the last requests end: flush until a flush finds nothing new.
      do {
        this.#handOver();
        if (!(await within(this.#thread.flush(), deadline - Date.now()))) break;
      } while (this.#pending.length > 0 && Date.now() < deadline);
    }
    this.#closed = true;
    if (this.#thread !== null) {
      this.#handOver();
      await this.#thread.close(Math.max(0, deadline - Date.now()));
    }
    if (this.#held > 0) {
      this.#warnings.drop('shutdown', this.#held);
      this.#held = 0;
      this.#bytes = 0;
      this.#pending = [];
      this.#pendingSizes = [];
    }
    this.#warnings.flush();
  }

  #handOver(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#thread === null || this.#pending.length === 0) return;
    const entries = this.#pending;
    const sizes = this.#pendingSizes;
    this.#pending = [];
    this.#pendingSizes = [];
    try {
      this.#thread.send(entries, sizes);
    } catch (err) {
      // Neither the entries nor their JSON form could be sent: they are lost, and said so.
      let bytes = 0;
      for (const s of sizes) bytes += s;
      const lost = sendFailed(entries.length, bytes, err);
      this.#progress(lost.progress, lost.error);
    }
  }

  #progress(p: Progress, error: WriteFailure | null): void {
    this.#held -= p.written + p.failed;
    this.#bytes -= p.writtenBytes + p.failedBytes;
    this.#stats.written += p.written;
    this.#stats.batches += p.batches;
    this.#stats.writeErrors += p.writeErrors;
    if (error !== null) this.#warnings.writeFailed({ message: error.message, code: error.code }, error.entries, error.attempt, error.givingUp);
    if (p.failed > 0) this.#warnings.drop('write_failed', p.failed);
    // Drops counted since the last warning are reported once the interval has passed, even if no new one comes.
    else this.#warnings.tick();
  }

  /** The thread died with entries in it: those are lost (the next hand-over starts a new thread). */
  #lost(err: Error): void {
    const inThread = this.#held - this.#pending.length;
    let pendingBytes = 0;
    for (const s of this.#pendingSizes) pendingBytes += s;
    this.#o.logger.error({ err }, 'log store: the writer thread ended unexpectedly; a new one is started');
    if (inThread > 0) {
      this.#held = this.#pending.length;
      this.#bytes = pendingBytes;
      this.#warnings.drop('write_failed', inThread);
    }
  }
}

/** Waits for `work` at most `ms`; true when it finished in time. */
async function within(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}
