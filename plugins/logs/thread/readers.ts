import { Worker } from 'node:worker_threads';
import { NO_DEADLINE, QueryTimeoutError } from '../analytics/query.js';
import type { LogReader } from '../reader.js';
import { threadModule } from './module-url.js';
import type { FromReader, ReaderData, ReadQuery, ToReader } from './read-protocol.js';

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * The reader threads of an SQLite log store: up to `size` of them, each started the first time every
 * running one is busy (a gateway nobody reads the log of starts none). A query goes to the thread with
 * the fewest in flight. A thread that dies fails its queries and is replaced on the next one.
 */
export class ReaderPool implements LogReader {
  readonly #data: ReaderData;
  readonly #size: number;
  readonly #threads: Thread[] = [];
  #starting: Promise<Thread> | null = null;
  #nextId = 1;
  #closed = false;

  constructor(data: ReaderData, size: number) {
    this.#data = data;
    this.#size = size;
  }

  list(...args: Parameters<LogReader['list']>): ReturnType<LogReader['list']> {
    const [filters, limit, cursor] = args;
    return this.#ask({ method: 'list', filters, limit, cursor }) as ReturnType<LogReader['list']>;
  }

  get(...args: Parameters<LogReader['get']>): ReturnType<LogReader['get']> {
    const [id, workspace] = args;
    return this.#ask({ method: 'get', id, workspace }) as ReturnType<LogReader['get']>;
  }

  groups(...args: Parameters<LogReader['groups']>): ReturnType<LogReader['groups']> {
    const [groupBy, columns, filters, limit, offset, deadline] = args;
    return this.#ask({ method: 'groups', groupBy, columns, filters, limit, offset, deadline: deadline ?? NO_DEADLINE }) as ReturnType<LogReader['groups']>;
  }

  timeseries(...args: Parameters<LogReader['timeseries']>): ReturnType<LogReader['timeseries']> {
    const [filters, bucketMs, origin, deadline] = args;
    return this.#ask({ method: 'timeseries', filters, bucketMs, origin: origin ?? filters.from, deadline: deadline ?? NO_DEADLINE }) as ReturnType<LogReader['timeseries']>;
  }

  /** Ends the threads once their queries are answered. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#starting?.catch(() => undefined);
    await Promise.all(
      this.#threads.map(
        (t) =>
          new Promise<void>((resolve) => {
            t.worker.once('exit', () => resolve());
            t.worker.postMessage({ type: 'close' } satisfies ToReader);
          }),
      ),
    );
  }

  async #ask(query: ReadQuery): Promise<unknown> {
    if (this.#closed) throw new Error('log store: the reader threads are closed');
    const thread = await this.#pick();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      thread.worker.postMessage({ type: 'query', id, query } satisfies ToReader);
    });
  }

  async #pick(): Promise<Thread> {
    let best: Thread | undefined;
    for (const t of this.#threads) if (best === undefined || t.pending.size < best.pending.size) best = t;
    if (best !== undefined && (best.pending.size === 0 || this.#threads.length >= this.#size)) return best;
    // Every thread busy (or none yet), and room for another.
    this.#starting ??= this.#start().finally(() => (this.#starting = null));
    return this.#starting;
  }

  #start(): Promise<Thread> {
    return new Promise<Thread>((resolve, reject) => {
      const entry = threadModule('reader');
      const worker = new Worker(entry.url, { eval: entry.eval, workerData: this.#data, name: 'log-reader' });
      // Reads never keep the process alive; close() ends the threads.
      worker.unref();
      const thread: Thread = { worker, pending: new Map() };
      let ready = false;
      worker.on('message', (m: FromReader) => {
        switch (m.type) {
          case 'ready':
            ready = true;
            this.#threads.push(thread);
            resolve(thread);
            break;
          case 'open_failed':
            reject(new Error(`log store: a reader thread could not open ${this.#data.file}: ${m.message}`));
            break;
          case 'result':
            thread.pending.get(m.id)?.resolve(m.result);
            thread.pending.delete(m.id);
            break;
          case 'failed':
            thread.pending.get(m.id)?.reject(m.timeoutMs === null ? new Error(m.message) : new QueryTimeoutError(m.timeoutMs));
            thread.pending.delete(m.id);
            break;
        }
      });
      let failure: Error | null = null;
      worker.on('error', (err) => {
        failure = err;
        if (!ready) reject(err);
      });
      worker.once('exit', (code) => {
        const i = this.#threads.indexOf(thread);
        if (i >= 0) this.#threads.splice(i, 1);
        if (!ready) reject(new Error(`log store: a reader thread exited (code ${code}) before it was ready`));
        for (const p of thread.pending.values()) p.reject(new Error(`log store: a reader thread ended (code ${code})${failure === null ? '' : `: ${failure.message}`}`));
        thread.pending.clear();
      });
    });
  }
}
