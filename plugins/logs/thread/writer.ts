/**
 * The log writer thread: it owns a connection of its own to the SQLite file,
 * finishes each entry (redaction, cutting) and inserts every batch in one
 * transaction. All of that is synchronous in better-sqlite3, so here it
 * blocks only this thread: a slow or locked disk never stalls requests.
 * Imports stay light (no core): the thread starts fast and holds little.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { finishEntry } from '../finish.js';
import { LogRepository } from '../store/repository.js';
import type { FromWriter, ToWriter, WriterData } from './protocol.js';

const port = parentPort!;
const data = workerData as WriterData;
const send = (message: FromWriter) => port.postMessage(message);

let repository: LogRepository;
try {
  repository = new LogRepository(sqliteClient(data.file));
  send({ type: 'ready' });
} catch (err) {
  send({ type: 'open_failed', message: (err as Error).message });
  process.exit(1);
}

// The main thread sends one batch at a time (it waits for the answer), and the client's
// transaction lock would keep two from interleaving anyway.
port.on('message', (message: ToWriter) => {
  if (message.type === 'close') {
    void repository.client.close().finally(() => {
      send({ type: 'closed' });
      port.close();
    });
    return;
  }
  const { id, entries } = message;
  for (const e of entries) finishEntry(e, data.finish);
  repository.insert(entries).then(
    () => send({ type: 'written', id, count: entries.length }),
    (err: unknown) => send({ type: 'failed', id, message: (err as Error).message, code: (err as { code?: string }).code ?? null }),
  );
});
