/**
 * A log reader thread: its own read connection to the SQLite file, answering
 * the log and analytics routes' queries (list, get, groups, time series) so no
 * read statement runs on the event loop. A query carries its deadline; the
 * repository checks it between statements (a SQLite statement cannot be
 * stopped from outside, and a thread must not be terminated inside one).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { QueryTimeoutError } from '../analytics/query.js';
import { bodyStore } from '../store/bodies.js';
import { LogRepository } from '../store/repository.js';
import type { FromReader, ReaderData, ToReader } from './read-protocol.js';

const port = parentPort!;
const data = workerData as ReaderData;
const send = (message: FromReader) => port.postMessage(message);

let repository: LogRepository;
try {
  repository = new LogRepository(sqliteClient(data.file, { busyTimeoutMs: 1000, cacheKiB: data.cacheKiB }), bodyStore(data.bodiesDir));
  send({ type: 'ready' });
} catch (err) {
  send({ type: 'open_failed', message: (err as Error).message });
  process.exit(1);
}

port.on('message', (message: ToReader) => {
  if (message.type === 'close') {
    void repository.client.close().finally(() => port.close());
    return;
  }
  const { id, query } = message;
  const run = (): Promise<unknown> => {
    switch (query.method) {
      case 'list':
        return repository.list(query.filters, query.limit, query.cursor);
      case 'get':
        return repository.get(query.id, query.workspace);
      case 'groups':
        return repository.groups(query.groupBy, query.columns, query.filters, query.limit, query.offset, query.deadline);
      case 'timeseries':
        return repository.timeseries(query.filters, query.bucketMs, query.origin, query.deadline);
    }
  };
  run().then(
    (result) => send({ type: 'result', id, result }),
    (err: unknown) => send({ type: 'failed', id, message: (err as Error).message, timeoutMs: err instanceof QueryTimeoutError ? err.limitMs : null }),
  );
});
