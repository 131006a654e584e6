/**
 * The log writer thread: it owns a connection of its own to the SQLite file
 * and a queue of the entries the main thread handed over. It finishes each
 * entry (redaction, cutting), inserts up to `batchSize` per transaction,
 * retries a failed batch, and reports what became of every entry. All of it
 * is synchronous in better-sqlite3, so a slow or locked disk blocks this
 * thread only, never requests. Imports stay light (no core): the thread
 * starts fast and holds little. (The SDK's entry point, and the core with it,
 * is loaded only once a header value needs its URL helper.)
 *
 * The thread always ends on its own (on `close`), never by `terminate()`:
 * stopping a thread while it is inside a SQLite call aborts the process. So
 * no call may block long: a lock held by another connection is waited for
 * BUSY_WAIT_MS at a time, and retried between messages.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteClient } from '../../../sdk/sqlite.js';
import type { LogEntry } from '../entry.js';
import { finishEntry } from '../finish.js';
import { mayHoldUserInfo, WITHOUT_HELPER, type UserInfoScrubber } from '../headers.js';
import { bodyStore } from '../store/bodies.js';
import { LogRepository } from '../store/repository.js';
import { unpackEntries } from './pack.js';
import type { FromWriter, ToWriter, WriterData } from './protocol.js';

/** Longest one statement waits for another connection's lock (SQLite's busy timeout). */
const BUSY_WAIT_MS = 100;
/** A locked database is not a failed write: it is retried without counting against maxWriteAttempts. */
const BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY']);

const port = parentPort!;
const data = workerData as WriterData;
const send = (message: FromWriter) => port.postMessage(message);

let repository: LogRepository;
try {
  repository = new LogRepository(sqliteClient(data.file, { busyTimeoutMs: BUSY_WAIT_MS }), bodyStore(data.bodiesDir));
  send({ type: 'ready' });
} catch (err) {
  send({ type: 'open_failed', message: (err as Error).message });
  process.exit(1);
}

let queue: LogEntry[] = [];
let sizes: number[] = [];
/** Flush requests waiting for the queue to empty. */
let flushes: number[] = [];
let draining = false;
let retryTimer: NodeJS.Timeout | null = null;
let waitTimer: NodeJS.Timeout | null = null;
let attempts = 0;
/** Set by `close`: the time after which nothing more is tried. */
let closeBy: number | null = null;
/**
 * The core's URL clean-up (`withoutUserInfo`, from the SDK's entry point), for header values holding
 * `user:pass@`. The thread starts without the core (about 110 ms and 9 MB more), so it is loaded the
 * first time a header value holds an `@`; if that fails, such values are not kept (WITHOUT_HELPER).
 */
let withoutUserInfo: UserInfoScrubber | null = null;

async function userInfoHelper(batch: readonly LogEntry[]): Promise<UserInfoScrubber> {
  if (withoutUserInfo !== null) return withoutUserInfo;
  if (!batch.some((e) => e.received_headers !== null && mayHoldUserInfo(e.received_headers))) return WITHOUT_HELPER;
  try {
    withoutUserInfo = (await import('../../../sdk/index.js')).withoutUserInfo;
  } catch {
    withoutUserInfo = WITHOUT_HELPER;
  }
  return withoutUserInfo;
}

port.on('message', (message: ToWriter) => {
  switch (message.type) {
    case 'entries': {
      const entries = unpackEntries(message.packed);
      for (let i = 0; i < entries.length; i++) {
        queue.push(entries[i]!);
        sizes.push(message.packed.sizes[i]!);
      }
      break;
    }
    case 'flush':
      flushes.push(message.id);
      break;
    case 'retention':
      // Between write transactions (messages are handled one at a time), in chunks, each its own statement.
      void repository.deleteBefore(message.before, message.rollups).then(
        (deleted) => send({ type: 'deleted', id: message.id, deleted, error: null }),
        (err: unknown) => send({ type: 'deleted', id: message.id, deleted: 0, error: (err as Error).message }),
      );
      return;
    case 'close':
      closeBy = Date.now() + message.timeoutMs;
      if (retryTimer !== null) {
        // A batch waiting to be retried: try now, the deadline decides from here.
        clearTimeout(retryTimer);
        retryTimer = null;
      }
      break;
  }
  if (draining || retryTimer !== null) return; // the running drain (or the retry) picks it up
  if (queue.length >= data.batchSize || flushes.length > 0 || closeBy !== null) {
    startDrain();
  } else if (waitTimer === null && queue.length > 0) {
    // Entries come in small groups, often: they are gathered into fuller transactions.
    waitTimer = setTimeout(startDrain, data.flushIntervalMs);
  }
});

function startDrain(): void {
  if (waitTimer !== null) {
    clearTimeout(waitTimer);
    waitTimer = null;
  }
  if (draining || retryTimer !== null) return;
  draining = true;
  // After the messages already waiting, so they join this write.
  setImmediate(() => void drain());
}

async function drain(): Promise<void> {
  while (queue.length > 0) {
    if (closeBy !== null && Date.now() >= closeBy) break; // out of time: the main thread counts what is left
    const count = Math.min(data.batchSize, queue.length);
    const batch = queue.slice(0, count);
    let bytes = 0;
    for (let i = 0; i < count; i++) bytes += sizes[i]!;
    // Idempotent, so a batch tried again is unchanged by a second pass.
    const scrubUserInfo = await userInfoHelper(batch);
    for (const e of batch) finishEntry(e, data.finish, scrubUserInfo);
    try {
      await repository.insert(batch);
    } catch (err) {
      const code = (err as { code?: string }).code ?? null;
      const busy = code !== null && BUSY_CODES.has(code);
      if (!busy) attempts++;
      const givingUp = !busy && attempts >= data.maxWriteAttempts;
      const error = { message: (err as Error).message, code, entries: count, attempt: busy ? 0 : attempts, givingUp };
      if (!givingUp) {
        send({ type: 'progress', written: 0, writtenBytes: 0, failed: 0, failedBytes: 0, batches: 0, writeErrors: 1, error });
        if (closeBy !== null && Date.now() + data.retryDelayMs >= closeBy) break;
        draining = false;
        retryTimer = setTimeout(() => {
          retryTimer = null;
          draining = true;
          void drain();
        }, data.retryDelayMs);
        return;
      }
      attempts = 0;
      remove(count);
      send({ type: 'progress', written: 0, writtenBytes: 0, failed: count, failedBytes: bytes, batches: 0, writeErrors: 1, error });
      continue;
    }
    attempts = 0;
    remove(count);
    send({ type: 'progress', written: count, writtenBytes: bytes, failed: 0, failedBytes: 0, batches: 1, writeErrors: 0, error: null });
  }
  draining = false;
  for (const id of flushes) send({ type: 'flushed', id });
  flushes = [];
  if (closeBy !== null) {
    await repository.client.close();
    if (repository.bodies.kind === 'segments') repository.bodies.segments.close();
    port.close();
  }
}

function remove(count: number): void {
  if (count === queue.length) {
    queue = [];
    sizes = [];
  } else {
    queue.splice(0, count);
    sizes.splice(0, count);
  }
}
