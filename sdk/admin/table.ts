import type { SqlClient } from '../sql.js';

/** A page request: `current_page` from 0, `page_size` rows. */
export interface Page {
  /** The page's index, from 0. */
  current: number;
  /** Rows per page. */
  size: number;
}

/** One page of rows and the total across pages. */
export interface Paged<T> {
  /** This page's rows. */
  data: T[];
  /** Rows across all pages. */
  total: number;
}

/** A page with each row presented. */
export function mapPage<T, R>(paged: Paged<T>, present: (row: T) => R): Paged<R> {
  return { total: paged.total, data: paged.data.map(present) };
}

type Row = Record<string, unknown>;

/**
 * The statements every stored resource needs, against either SQL store:
 * reads with numeric columns normalised (PostgreSQL returns BIGINT as text),
 * pages with a total, inserts and updates from plain rows, and version
 * counters. Table and column names come from the caller's own code; values
 * always go as parameters.
 */
export class SqlTables {
  /**
   * @param db the store's client (read when called, so a plugin can build this before its store is open)
   * @param numeric columns to read as numbers wherever they appear
   */
  constructor(
    readonly db: () => SqlClient,
    private readonly numeric: ReadonlySet<string>,
  ) {}

  #normalise<T>(row: Row | undefined): T | undefined {
    if (row === undefined) return undefined;
    for (const k in row) if (this.numeric.has(k) && row[k] !== null && typeof row[k] !== 'number') row[k] = Number(row[k]);
    return row as T;
  }

  /** The first row a query returns, numeric columns as numbers; undefined when none. `client`: a transaction's, else the store's. */
  async get<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T | undefined> {
    return this.#normalise<T>(await client.get<Row>(sql, params));
  }

  /** Every row a query returns, numeric columns as numbers. `client`: a transaction's, else the store's. */
  async all<T>(sql: string, params: readonly unknown[], client = this.db()): Promise<T[]> {
    return (await client.all<Row>(sql, params)).map((r) => this.#normalise<T>(r)!);
  }

  /** `SELECT select FROM …` one page, ordered, with the total of `from`'s rows. */
  async paged<T>(from: string, params: readonly unknown[], order: string, page: Page, select = '*'): Promise<Paged<T>> {
    const count = await this.db().get<{ n: number | string }>(`SELECT COUNT(*) AS n ${from}`, params);
    const data = await this.all<T>(`SELECT ${select} ${from} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, page.size, page.current * page.size]);
    return { data, total: Number(count?.n ?? 0) };
  }

  /** Inserts `row` (its keys are the columns) into `table`. `client`: a transaction's, else the store's. */
  async insert(table: string, row: Row, client = this.db()): Promise<void> {
    const cols = Object.keys(row);
    await client.run(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, cols.map((c) => row[c]));
  }

  /** Sets `patch`'s columns on the rows matching every column of `where`; the number of rows changed. */
  async update(table: string, where: Row, patch: Row, client = this.db()): Promise<number> {
    const cols = Object.keys(patch);
    if (cols.length === 0) return 0;
    const keys = Object.keys(where);
    const { changes } = await client.run(
      `UPDATE ${table} SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}`,
      [...cols.map((c) => patch[c]), ...keys.map((k) => where[k])],
    );
    return changes;
  }

  /**
   * Takes the next version number of a versioned resource inside the transaction `tx`. The row's
   * counter is raised before it is read: a concurrent writer blocks on the row's lock and then counts
   * from the committed number, so two versions never get one number. (A plain SELECT first would let
   * both read the same number on PostgreSQL, where the second INSERT then fails on the primary key.)
   */
  async nextVersion(table: string, column: string, id: string, now: number, tx: SqlClient): Promise<number> {
    await tx.run(`UPDATE ${table} SET ${column} = ${column} + 1, updated_at = ? WHERE id = ?`, [now, id]);
    const current = await tx.get<Record<string, number | string>>(`SELECT ${column} AS version FROM ${table} WHERE id = ?`, [id]);
    return Number(current!.version);
  }
}
