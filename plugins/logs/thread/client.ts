import { Worker } from 'node:worker_threads';
import type { LogEntry } from '../entry.js';
import type { RollupCutoffs } from '../store/repository.js';
import { threadModule } from './module-url.js';
import { packEntries } from './pack.js';
import { sendFailed, type FromWriter, type Progress, type ToWriter, type WriteFailure, type WriterData } from './protocol.js';

/** How long past its deadline a closing thread may take to end: one statement (a lock wait is at most 100 ms) and the connection's close. */
const CLOSE_SLACK_MS = 2000;

/** What the writer thread reports, as the main thread sees it. */
export interface WriterEvents {
  progress(p: Progress, error: WriteFailure | null): void;
  /** The thread ended unexpectedly: whatever it held is gone. A new one is started on the next send. */
  lost(err: Error): void;
}

/** The main thread's end of the log writer thread. */
export interface WriterThread {
  send(entries: LogEntry[], sizes: number[]): void;
  /** Resolves once everything sent before is written or dropped (or the thread is gone). */
  flush(): Promise<void>;
  /** Deletes entries created before `before` (epoch ms; null: none) and rollups past their cut-offs, on the thread; resolves with entries deleted. */
  deleteBefore(before: number | null, rollups: RollupCutoffs): Promise<number>;
  /** Lets the thread write what it holds for up to `timeoutMs` and end. Resolves true once it ended, false if it did not in time. */
  close(timeoutMs: number): Promise<boolean>;
}

function spawn(data: WriterData, events: WriterEvents, flushed: (id: number) => void, deleted: (m: Extract<FromWriter, { type: 'deleted' }>) => void): Promise<Worker> {
  return new Promise<Worker>((resolve, reject) => {
    const entry = threadModule('writer');
    const w = new Worker(entry.url, { eval: entry.eval, workerData: data, name: 'log-writer' });
    // The thread never keeps the process alive by itself: close() is what ends it, and waits for it.
    w.unref();
    let ready = false;
    w.on('message', (m: FromWriter) => {
      switch (m.type) {
        case 'ready':
          ready = true;
          resolve(w);
          break;
        case 'open_failed':
          reject(new Error(`log store: the writer thread could not open ${data.file}: ${m.message}`));
          break;
        case 'progress':
          events.progress(m, m.error);
          break;
        case 'flushed':
          flushed(m.id);
          break;
        case 'deleted':
          deleted(m);
          break;
      }
    });
    w.on('error', (err) => {
      if (!ready) reject(err);
    });
    w.on('exit', (code) => {
      if (!ready) reject(new Error(`log store: the writer thread exited (code ${code}) before it was ready`));
    });
  });
}

/** Starts the writer thread on `data.file`; resolves once its connection is open. */
export async function startWriterThread(data: WriterData, events: WriterEvents): Promise<WriterThread> {
  let nextFlush = 1;
  const flushes = new Map<number, () => void>();
  const deletions = new Map<number, { resolve: (n: number) => void; reject: (err: Error) => void }>();
  const flushed = (id: number) => {
    flushes.get(id)?.();
    flushes.delete(id);
  };
  const deleted = (m: Extract<FromWriter, { type: 'deleted' }>) => {
    const waiting = deletions.get(m.id);
    deletions.delete(m.id);
    if (m.error === null) waiting?.resolve(m.deleted);
    else waiting?.reject(new Error(m.error));
  };
  let closing = false;
  let current: Worker | null = null;

  const watch = (w: Worker) => {
    let failure: Error | null = null;
    // An uncaught error in the thread: 'exit' follows, and reports it.
    w.on('error', (err) => (failure = err));
    w.once('exit', (code) => {
      if (current === w) current = null;
      for (const done of flushes.values()) done();
      flushes.clear();
      for (const waiting of deletions.values()) waiting.reject(new Error('log store: the writer thread ended during a retention clean-up'));
      deletions.clear();
      if (!closing) events.lost(new Error(`log store: the writer thread exited (code ${code})${failure === null ? '' : `: ${failure.message}`}`));
    });
    return w;
  };
  current = watch(await spawn(data, events, flushed, deleted));
  let respawning: Promise<void> | null = null;
  // Entries sent while a new thread starts wait here, in order.
  let backlog: ToWriter[] = [];

  const post = (message: ToWriter) => {
    if (current !== null) {
      postTo(current, message);
      return;
    }
    backlog.push(message);
    respawning ??= spawn(data, events, flushed, deleted).then(
      (w) => {
        current = watch(w);
        respawning = null;
        const pending = backlog;
        backlog = [];
        for (const m of pending) {
          try {
            postTo(w, m);
          } catch (err) {
            // Not even the JSON form could be sent: those entries are lost, and said so (a throw here would be an unhandled rejection).
            if (m.type !== 'entries') throw err;
            const lost = sendFailed(m.packed.count, m.packed.sizes.reduce((a, b) => a + b, 0), err);
            events.progress(lost.progress, lost.error);
          }
        }
      },
      (err: Error) => {
        respawning = null;
        backlog = [];
        events.lost(err);
      },
    );
  };

  return {
    send(entries, sizes) {
      post({ type: 'entries', packed: packEntries(entries, sizes) });
    },
    flush() {
      const id = nextFlush++;
      return new Promise<void>((resolve) => {
        flushes.set(id, resolve);
        post({ type: 'flush', id });
      });
    },
    deleteBefore(before, rollups) {
      const id = nextFlush++;
      return new Promise<number>((resolve, reject) => {
        deletions.set(id, { resolve, reject });
        post({ type: 'retention', id, before, rollups });
      });
    },
    async close(timeoutMs) {
      closing = true;
      await respawning;
      const w = current;
      if (w === null) return true;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      // The thread stops trying at the deadline and ends itself; the slack covers the statement it may be in.
      postTo(w, { type: 'close', timeoutMs });
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs + CLOSE_SLACK_MS)))]);
      clearTimeout(timer);
      // Not terminate(): stopping a thread inside a SQLite call aborts the process. A thread stuck in the disk is left
      // (unref'd) to end with the process.
      return ended;
    },
  };
}

function postTo(w: Worker, message: ToWriter): void {
  if (message.type !== 'entries') {
    w.postMessage(message);
    return;
  }
  const packed = message.packed;
  try {
    // The numbers' buffer moves to the thread instead of being copied; after this, it is empty here.
    w.postMessage(message, [packed.numbers.buffer as ArrayBuffer]);
  } catch {
    // Something in an entry's objects cannot be cloned (a hook left a function or a class in its results): its JSON
    // form can. A failed postMessage transferred nothing, so the numbers are still here.
    w.postMessage({ type: 'entries', packed: { ...packed, objects: JSON.parse(JSON.stringify(packed.objects)) as unknown[] } }, [packed.numbers.buffer as ArrayBuffer]);
  }
}
