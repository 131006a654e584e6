import pg from 'pg';
import { numberPlaceholders, type SqlClient } from '../../../sdk/index.js';

/** A statement's `$n` form, computed once per distinct text. */
const rewritten = new Map<string, string>();
function text(sql: string): string {
  let t = rewritten.get(sql);
  if (t === undefined) {
    t = numberPlaceholders(sql);
    if (rewritten.size < 2000) rewritten.set(sql, t);
  }
  return t;
}

// BIGINT (int8) columns hold millisecond times and counters, far below 2^53: read them as numbers.
pg.types.setTypeParser(20, (v) => Number(v));

/** How the gateway reaches PostgreSQL: directly (or through a session-mode pooler), or through a transaction-mode pooler. */
export type Pooler = 'none' | 'transaction';

/**
 * PostgreSQL through a `pg` pool. `schema` puts every table in one schema
 * (created when missing), so several deployments or test runs share one
 * database without colliding.
 *
 * Nothing here needs a session of its own, so a transaction-mode pooler
 * (PgBouncer's `pool_mode = transaction`) in front is safe: statements are
 * sent unnamed (no prepared statement outlives its transaction), locks are
 * transaction-level (`pg_advisory_xact_lock`), and there is no LISTEN or
 * temporary table. The one session setting, the schema's `search_path`, is set
 * on each connection when connected directly; behind a transaction-mode pooler
 * (`pooler: 'transaction'`) it is set inside each transaction instead
 * (`SET LOCAL`), a statement outside one then running in a transaction of its
 * own. Set the role's `search_path` on the server instead and omit `schema`
 * to spare those round trips (docs/operations.md, "PostgreSQL behind a pooler").
 */
export async function postgresClient(options: { url: string; schema?: string; max?: number; pooler?: Pooler; readOnly?: boolean }): Promise<SqlClient> {
  // Named, so an operator sees (and a drill can drop) the gateway's own connections in pg_stat_activity.
  const pool = new pg.Pool({ connectionString: options.url, max: options.max ?? 10, application_name: 'switchyard-gateway' });
  pool.on('error', () => undefined); // an idle client's error surfaces on the next query instead
  const schema = options.schema;
  const pooled = options.pooler === 'transaction';
  if (schema !== undefined) {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`postgres schema "${schema}" must be lower-case letters, digits and _`);
    // Instances starting together race here: IF NOT EXISTS checks the name before the insert, so the loser gets a
    // unique violation (23505) on pg_namespace. The schema exists then, which is all this asks.
    // A read replica cannot create it (and has it from its primary).
    if (options.readOnly !== true) {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch((err: { code?: string }) => {
        if (err.code !== '23505') throw err;
      });
    }
    if (!pooled) {
      pool.on('connect', (client) => {
        client.query(`SET search_path TO ${schema}`).catch(() => undefined);
      });
      // Connections opened before the listener was added (the CREATE SCHEMA one) get it too.
      await pool.query(`SET search_path TO ${schema}`);
    }
  }
  const over = (q: { query: pg.Pool['query'] } | pg.PoolClient): Omit<SqlClient, 'transaction' | 'close'> => ({
    dialect: 'postgres',
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await q.query(text(sql), params as unknown[])).rows as T[];
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      return (await q.query(text(sql), params as unknown[])).rows[0] as T | undefined;
    },
    async run(sql: string, params: readonly unknown[] = []) {
      return { changes: (await q.query(text(sql), params as unknown[])).rowCount ?? 0 };
    },
  });
  async function transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    // A checked-out connection the server drops (a restart, a pooler, pg_terminate_backend) emits 'error' on the
    // client: unheard, that would end the process. The statement in progress fails on its own.
    client.on('error', ignore);
    let broken: unknown;
    try {
      await client.query('BEGIN');
      // Inside the transaction: a transaction-mode pooler keeps one server connection for it, not for the session.
      if (schema !== undefined) await client.query(`SET LOCAL search_path TO ${schema}`);
      const tx: SqlClient = {
        ...over(client),
        transaction: () => Promise.reject(new Error('nested transactions are not supported')),
        close: async () => undefined,
      };
      const result = await fn(tx);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (connectionLost(err)) broken = err;
      else await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.removeListener('error', ignore);
      // A connection that broke is closed, not handed to the next transaction.
      client.release(broken as Error | undefined);
    }
  }
  // Behind a transaction-mode pooler with a schema, a statement alone runs in a transaction that sets it.
  const single = pooled && schema !== undefined ? wrapped(transaction) : over(pool);
  return { ...single, transaction, close: () => pool.end() };
}

const ignore = (): void => undefined;

/**
 * Whether an error means the connection itself is gone (not a statement refused): no SQLSTATE (a socket error),
 * a connection exception (08…) or an operator intervention (57P…: terminated, shutting down).
 */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P');
}

/** The statements of a client, each in a transaction of its own. */
function wrapped(transaction: <T>(fn: (tx: SqlClient) => Promise<T>) => Promise<T>): Omit<SqlClient, 'transaction' | 'close'> {
  return {
    dialect: 'postgres',
    all: (sql, params) => transaction((tx) => tx.all(sql, params)),
    get: (sql, params) => transaction((tx) => tx.get(sql, params)),
    run: (sql, params) => transaction((tx) => tx.run(sql, params)),
  };
}
