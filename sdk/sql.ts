/**
 * The SQL surface the control plane and the log store are written against.
 * Two implementations (SQLite, PostgreSQL) pass one test suite. Statements use
 * `?` placeholders in both; the PostgreSQL client rewrites them to `$n`.
 * Portable types only: TEXT, INTEGER, BIGINT, DOUBLE PRECISION; JSON as TEXT,
 * booleans as 0/1, times as BIGINT milliseconds.
 */
export interface SqlClient {
  /** The database behind it, for the few statements that differ (upserts, types). */
  readonly dialect: 'sqlite' | 'postgres';
  /** Every row a query returns (`?` placeholders, bound to `params` in order). */
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** The first row a query returns, or undefined when none. */
  get<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  /** Runs a statement that returns no rows; resolves with the number of rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<{ changes: number }>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T>;
  /** Closes the connection; the store that opened it calls this on close. */
  close(): Promise<void>;
}

/**
 * One schema change. `up` is one SQL text for both dialects (portable types only: TEXT, INTEGER, BIGINT,
 * DOUBLE PRECISION; JSON as TEXT, booleans 0/1, times as epoch ms), or one per dialect.
 */
export interface Migration {
  /** The change's number in its namespace; changes run in version order, each once. */
  version: number;
  /** A short name for people, recorded with the version. */
  name: string;
  /** The SQL to run: one text for both dialects, or one per dialect. */
  up: string | { sqlite: string; postgres: string };
  /**
   * The same change applied before under another namespace (tables a feature took over from another
   * plugin): when that namespace's version is recorded, this one is recorded as applied without
   * running. So a database made before the move keeps its tables and data, and a new one gets them
   * from the feature that owns them now.
   */
  adopts?: { namespace: string; version: number };
}

/**
 * Applies the migrations of one namespace (e.g. `control-plane`, `logs`) that
 * are not applied yet, in version order, in one transaction.
 * Idempotent, and safe to run from several instances at once on PostgreSQL
 * (an advisory lock serialises them).
 */
export async function migrate(client: SqlClient, namespace: string, migrations: readonly Migration[]): Promise<number[]> {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.version === sorted[i - 1]!.version) throw new Error(`migrations of ${namespace}: version ${sorted[i]!.version} appears twice`);
  }
  const applied: number[] = [];
  await client.transaction(async (tx) => {
    // One lock for every namespace, taken before the bookkeeping table is made: instances starting
    // together on a new schema otherwise race on CREATE TABLE IF NOT EXISTS, whose loser fails with
    // a unique violation on pg_type (seen with three processes at once).
    if (tx.dialect === 'postgres') await tx.get('SELECT pg_advisory_xact_lock(hashtext(?))', ['gateway:migrate']);
    await tx.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (namespace TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, applied_at BIGINT NOT NULL, PRIMARY KEY (namespace, version))',
    );
    const done = new Set((await tx.all<{ version: number }>('SELECT version FROM schema_migrations WHERE namespace = ?', [namespace])).map((r) => Number(r.version)));
    const recorded = async (ns: string, version: number) => (await tx.get('SELECT 1 AS x FROM schema_migrations WHERE namespace = ? AND version = ?', [ns, version])) !== undefined;
    for (const m of sorted) {
      if (done.has(m.version)) continue;
      if (m.adopts !== undefined && (await recorded(m.adopts.namespace, m.adopts.version))) {
        await tx.run('INSERT INTO schema_migrations (namespace, version, name, applied_at) VALUES (?, ?, ?, ?)', [namespace, m.version, m.name, Date.now()]);
        continue;
      }
      const sql = typeof m.up === 'string' ? m.up : m.up[tx.dialect];
      for (const statement of splitStatements(sql)) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (namespace, version, name, applied_at) VALUES (?, ?, ?, ?)', [namespace, m.version, m.name, Date.now()]);
      applied.push(m.version);
    }
  });
  return applied;
}

/** Splits a migration into statements at semicolons outside quotes. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote !== null) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === ';') {
      if (current.trim() !== '') out.push(current.trim());
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim() !== '') out.push(current.trim());
  return out;
}

/** Rewrites `?` placeholders to `$1, $2, …`, leaving `?` inside quoted strings alone. */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  let quote: string | null = null;
  let out = '';
  for (const ch of sql) {
    if (quote !== null) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * What an SQL store plugin registers in `api.stores` (under `sql` by default).
 * The connection opens in the store's `onReady`, so users take the store at
 * boot and call `client()` from their own `onReady` on (plugins listed after the store).
 */
export interface SqlStore {
  /** The database behind it (SQLite or PostgreSQL). */
  readonly dialect: 'sqlite' | 'postgres';
  /** The open connection. Throws until the store's `onReady` opened it: call it from your own `onReady` on. */
  client(): SqlClient;
  /**
   * A connection to a read replica, for reads that may lag the writes (the log and analytics routes), or null
   * when the store has none (then read through {@link client}). Its lag: {@link readLagMs}.
   */
  readClient?(): SqlClient | null;
  /** How far the read replica is behind, ms (0 when caught up), or null without one. */
  readLagMs?(): Promise<number | null>;
  /**
   * The SQLite database file, when the store is one on disk: a plugin with
   * heavy writes (the log store) may open its own connection to it in a
   * worker thread, so its synchronous writes never run on the event loop.
   */
  readonly file?: string;
}

/** A store whose client is set once the connection is open; `file` for an SQLite store on disk (see {@link SqlStore.file}). */
export function sqlStore(dialect: 'sqlite' | 'postgres', file?: string): SqlStore & { open(client: SqlClient): void } {
  let current: SqlClient | null = null;
  return {
    dialect,
    ...(file === undefined || file === ':memory:' ? {} : { file }),
    client() {
      if (current === null) throw new Error(`the ${dialect} store is not open yet: list it before the plugins that use it`);
      return current;
    },
    open(client) {
      current = client;
    },
  };
}
