import type { Logger } from '../../../../core/index.js';
import { BodySegments } from '../../../../plugins/logs/bodies/segments.js';
import { LOG_MIGRATIONS, LOGS_NAMESPACE } from '../../../../plugins/logs/store/migrations.js';
import { ThreadSink } from '../../../../plugins/logs/thread/sink.js';
import { migrate } from '../../../../sdk/sql.js';
import { sqliteClient } from '../../../../sdk/sqlite.js';
import { memoryLogger } from '../../../helpers/gateway.js';

/** Creates the log tables in `file`, as the log store's migrations do at start. */
export async function migrateLogFile(file: string): Promise<void> {
  const client = sqliteClient(file);
  await migrate(client, LOGS_NAMESPACE, LOG_MIGRATIONS);
  await client.close();
}

/** A ThreadSink on `file` with small bounds and quick timers for tests; `o` overrides any option. */
export function threadSink(file: string, logger: Logger = memoryLogger('warn').logger, o: Partial<ConstructorParameters<typeof ThreadSink>[0]> = {}): ThreadSink {
  return new ThreadSink({
    file,
    bodiesDir: `${file}.bodies`,
    finish: { capture: 'truncated', captureBytes: 64, scanLimit: 4096 },
    batchSize: 100,
    flushIntervalMs: 20,
    maxWriteAttempts: 2,
    retryDelayMs: 10,
    maxEntries: 1000,
    maxBytes: 1e9,
    warnIntervalMs: 60_000,
    logger,
    ...o,
  });
}

/** A stored row (selected with its `body_ref`) with its body columns read back from the body segments beside `file`, as the row once held them. */
export function withBodies<T extends Record<string, unknown>>(file: string, row: T): T {
  const body = row.body_ref === null || row.body_ref === undefined ? null : (new BodySegments(`${file}.bodies`).read(String(row.body_ref)) as unknown[] | null);
  const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));
  return { ...row, request_headers: json(body?.[0]), hook_results: json(body?.[1]), request_body: body?.[2] ?? null, response_body: body?.[3] ?? null };
}
