import * as v from 'valibot';
import { type GatewayPlugin, parseOptions, sqlStore } from '../../../sdk/index.js';
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
      api.stores.add(opts.name, store);
      api.onReady(async () => {
        store.open(await postgresClient({ url: opts.url, schema: opts.schema, max: opts.max, pooler: opts.pooler }));
      });
      api.onClose(() => store.client().close());
    },
  };
}

export default postgresStore;
