import type { SqlClient } from '../../sdk/index.js';

/** One statement a recorded client ran: its text, its parameters, and how many rows it returned or changed. */
export interface RecordedStatement {
  sql: string;
  params: unknown[];
  rows: number;
}

/**
 * A client that runs every statement on `inner` and records it, transactions included: what a query
 * asked the database, in order, to compare two runs statement by statement (the same statements
 * over the same rows cost the same: a timing oracle needs a difference here).
 */
export function recordingClient(inner: SqlClient): { client: SqlClient; statements: RecordedStatement[] } {
  const statements: RecordedStatement[] = [];
  const wrap = (c: SqlClient): SqlClient => ({
    dialect: c.dialect,
    async all<T>(sql: string, params: readonly unknown[] = []) {
      const rows = await c.all<T>(sql, params);
      statements.push({ sql, params: [...params], rows: rows.length });
      return rows;
    },
    async get<T>(sql: string, params: readonly unknown[] = []) {
      const row = await c.get<T>(sql, params);
      statements.push({ sql, params: [...params], rows: row === undefined ? 0 : 1 });
      return row;
    },
    async run(sql: string, params: readonly unknown[] = []) {
      const result = await c.run(sql, params);
      statements.push({ sql, params: [...params], rows: result.changes });
      return result;
    },
    transaction: (fn) => c.transaction((tx) => fn(wrap(tx))),
    close: () => c.close(),
  });
  return { client: wrap(inner), statements };
}
