import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LogEntry } from '../entry.js';
import type { FromWriter, ToWriter, WriterData } from './protocol.js';

/** The main thread's end of the log writer thread. */
export interface WriterThread {
  /** Finishes and inserts a batch on the thread; resolves once it is committed, rejects when the insert failed. */
  write(entries: LogEntry[]): Promise<void>;
  /** Closes the thread's connection and ends the thread. */
  close(): Promise<void>;
}

/** An error from the writer thread, with SQLite's code (`SQLITE_BUSY`, …) when there is one. */
export class WriterError extends Error {
  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/**
 * The writer's module: the compiled `.js` beside this file, or under a TypeScript runner (tests,
 * `tsx`) the `.ts` source, loaded through tsx's ESM hooks since a worker does not inherit them.
 */
function writerEntry(): { url: URL | string; eval: boolean } {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return { url: new URL('./writer.js', self), eval: false };
  // The package's ESM entry (resolving through require would pick its CommonJS one).
  const pkg = createRequire(self).resolve('tsx/package.json');
  const tsx = pathToFileURL(join(dirname(pkg), 'dist/esm/api/index.mjs')).href;
  const source = new URL('./writer.ts', self).href;
  return { url: `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(source)}); })`, eval: true };
}

/**
 * Starts the writer thread on `file` and resolves once its connection is open.
 * If the thread dies later (it should not), pending writes reject and the next
 * write starts a new one, so the queue's retries carry on.
 */
export async function startWriterThread(data: WriterData): Promise<WriterThread> {
  let worker: Worker | null = null;
  let opening: Promise<Worker> | null = null;
  let nextId = 1;
  let closing = false;
  const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };

  const open = (): Promise<Worker> =>
    (opening ??= new Promise<Worker>((resolve, reject) => {
      const entry = writerEntry();
      const w = new Worker(entry.url, { eval: entry.eval, workerData: data, name: 'log-writer' });
      // The thread never keeps the process alive by itself: close() is what ends it, and waits for it.
      w.unref();
      let ready = false;
      w.on('message', (m: FromWriter) => {
        switch (m.type) {
          case 'ready':
            ready = true;
            worker = w;
            resolve(w);
            break;
          case 'open_failed':
            reject(new Error(`log store: the writer thread could not open ${data.file}: ${m.message}`));
            break;
          case 'written':
            pending.get(m.id)?.resolve();
            pending.delete(m.id);
            break;
          case 'failed':
            pending.get(m.id)?.reject(new WriterError(m.message, m.code));
            pending.delete(m.id);
            break;
          case 'closed':
            break;
        }
      });
      w.on('error', (err) => {
        if (!ready) reject(err);
        failAll(err);
      });
      w.on('exit', (code) => {
        if (worker === w) worker = null;
        opening = null;
        if (!ready) reject(new Error(`log store: the writer thread exited (code ${code}) before it was ready`));
        failAll(new Error(`log store: the writer thread exited (code ${code})`));
      });
    }));

  await open();

  return {
    async write(entries) {
      if (closing) throw new Error('log store: the writer thread is closed');
      const w = worker ?? (await open());
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        try {
          w.postMessage({ type: 'write', id, entries } satisfies ToWriter);
        } catch {
          try {
            // Something in an entry cannot be cloned (a hook left a function or a class in its results): its JSON form can.
            w.postMessage({ type: 'write', id, entries: JSON.parse(JSON.stringify(entries)) as LogEntry[] } satisfies ToWriter);
          } catch (err) {
            pending.delete(id);
            reject(err as Error);
          }
        }
      });
    },
    async close() {
      closing = true;
      const w = worker;
      if (w === null) return;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ type: 'close' } satisfies ToWriter);
      // The thread ends once its port closes; a thread stuck in a write is stopped after a while.
      const timer = setTimeout(() => void w.terminate(), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
