import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import * as v from 'valibot';
import { type GatewayPlugin, parseOptions, sqliteClient, sqlStore } from '../../../sdk/index.js';

export const PLUGIN_NAME = 'sqlite';

const OptionsSchema = v.strictObject({
  /** Database file. Default `<dataDir>/gateway.db`. `:memory:` for tests. */
  file: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** Directory for the default file (the server passes GATEWAY_DATA_DIR). Default `./data`. */
  dataDir: v.optional(v.string(), './data'),
  /** Name in `api.stores`. Default `sql`. */
  name: v.optional(v.string(), 'sql'),
  /** Page cache of the connection, in KiB (SQLite's `cache_size`). Default 2000; raise it for heavy log queries on a large file. */
  cacheKiB: v.optional(v.pipe(v.number(), v.integer(), v.minValue(64, 'must be an integer of at least 64')), 2000),
});

export type SqliteStoreOptions = v.InferInput<typeof OptionsSchema>;

/** The embedded SQL store: one SQLite file, nothing to run beside the gateway. */
export function sqliteStore(options: SqliteStoreOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const file = opts.file ?? join(opts.dataDir, 'gateway.db');
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const store = sqlStore('sqlite', file === ':memory:' ? file : resolve(file));
      api.stores.add(opts.name, store);
      api.onReady(() => {
        if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
        store.open(sqliteClient(file, { cacheKiB: opts.cacheKiB }));
      });
      api.onClose(() => store.client().close());
    },
  };
}

export default sqliteStore;
