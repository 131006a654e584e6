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

/**
 * PostgreSQL through a `pg` pool. `schema` puts every table in one schema
 * (created when missing), so several deployments or test runs share one
 * database without colliding.
 */
export async function postgresClient(options: { url: string; schema?: string; max?: number }): Promise<SqlClient> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.max ?? 10 });
  pool.on('error', () => undefined); // an idle client's error surfaces on the next query instead
  if (options.schema !== undefined) {
    const schema = options.schema;
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`postgres schema "${schema}" must be lower-case letters, digits and _`);
    // Instances starting together race here: IF NOT EXISTS checks the name before the insert, so the loser gets a
    // unique violation (23505) on pg_namespace. The schema exists then, which is all this asks.
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch((err: { code?: string }) => {
      if (err.code !== '23505') throw err;
    });
    pool.on('connect', (client) => {
      client.query(`SET search_path TO ${schema}`).catch(() => undefined);
    });
    // Connections opened before the listener was added (the CREATE SCHEMA one) get it too.
    await pool.query(`SET search_path TO ${schema}`);
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
  return {
    ...over(pool),
    async transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        if (options.schema !== undefined) await client.query(`SET search_path TO ${options.schema}`);
        await client.query('BEGIN');
        const tx: SqlClient = {
          ...over(client),
          transaction: () => Promise.reject(new Error('nested transactions are not supported')),
          close: async () => undefined,
        };
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
