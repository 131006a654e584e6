import * as v from 'valibot';
import { type GatewayPlugin, parseOptions, type SqlClient, sqlStore } from '../../../sdk/index.js';
import { postgresClient } from './client.js';

export const PLUGIN_NAME = 'postgres';

const OptionsSchema = v.strictObject({
  /** Connection URL (the server passes DATABASE_URL). */
  url: v.pipe(v.string(), v.minLength(1, 'is required (set DATABASE_URL)')),
  /** Schema for every table; created when missing. Default: the connection's search_path. */
  schema: v.optional(v.pipe(v.string(), v.regex(/^[a-z_][a-z0-9_]*$/, 'must be lower-case letters, digits and _'))),
  /** Pool size: the most connections this process opens. Default 10. */
  max: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 10),
  /**
   * `transaction` when a transaction-mode pooler (PgBouncer `pool_mode = transaction`) stands in front: no session
   * setting is relied on (see client.ts). Default `none` (direct, or a session-mode pooler).
   */
  pooler: v.optional(v.picklist(['none', 'transaction'], 'must be none or transaction'), 'none'),
  /**
   * A read replica's URL (`DATABASE_READ_URL`): the log and analytics routes read there, a little behind the
   * writes (the lag is in their `x-gateway-read-lag-ms` header). Default: none, every read on `url`.
   */
  readUrl: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Name in `api.stores`. Default `sql`. */
  name: v.optional(v.string(), 'sql'),
});

export type PostgresStoreOptions = v.InferInput<typeof OptionsSchema>;

/** The shared SQL store for several gateway instances: PostgreSQL. */
export function postgresStore(options: PostgresStoreOptions): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const store = sqlStore('postgres');
      let reader: SqlClient | null = null;
      let lag: { at: number; value: Promise<number | null> } | null = null;
      api.stores.add(
        opts.name,
        Object.assign(store, {
          readClient: () => reader,
          // Asked at most once a second: every log read reports it.
          readLagMs(): Promise<number | null> {
            if (reader === null) return Promise.resolve(null);
            const now = Date.now();
            if (lag === null || now - lag.at > 1000) lag = { at: now, value: replicaLag(reader).catch(() => null) };
            return lag.value;
          },
        }),
      );
      api.onReady(async () => {
        store.open(await postgresClient({ url: opts.url, schema: opts.schema, max: opts.max, pooler: opts.pooler }));
        if (opts.readUrl !== undefined) reader = await postgresClient({ url: opts.readUrl, schema: opts.schema, max: opts.max, pooler: opts.pooler, readOnly: true });
      });
      api.onClose(async () => {
        await reader?.close();
        await store.client().close();
      });
    },
  };
}

export default postgresStore;

/**
 * How far a replica is behind, ms: 0 when it has replayed all it received (an idle primary sends nothing, so the
 * time since its last replayed transaction is no lag), else the age of the last transaction it replayed.
 */
async function replicaLag(reader: SqlClient): Promise<number | null> {
  const row = await reader.get<{ lag: number | string | null }>(
    'SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 ' +
      'ELSE EXTRACT(EPOCH FROM (now() - pg_last_xact_replay_timestamp())) * 1000 END AS lag',
  );
  return row?.lag === null || row?.lag === undefined ? null : Math.max(0, Math.round(Number(row.lag)));
}
