import type { SqlClient } from '../../../sdk/index.js';
import type { LogEntry } from '../entry.js';
import { addAgg, addEntry, emptyAgg, LATENCY_BIN_SQL, SCAN_EXPRESSIONS, type Agg } from './aggregate.js';
import { CUBES, DAY, dimSql, dimValue, EXTREMES, HOUR, LEVELS, METRICS, METRICS_V9, MINUTE, type Cube } from './cubes.js';
import { ROWS_PER_STATEMENT } from '../store/sql.js';
import { BIN_COLUMNS, binOf } from './sketch.js';

/*
 * The rollup tables: their DDL, the back-fill from rows already stored, the
 * writer's upserts (in the transaction that inserts the rows, so rows and
 * rollups never disagree), and their retention.
 */

type Dialect = 'sqlite' | 'postgres';

/** Name/value pairs about the rollups; `minute_floor`: minute rows before this time were deleted (epoch ms). */
export const STATE_TABLE = 'gateway_log_rollup_state';

const keyColumns = (c: Cube) => ['level', 'bucket', ...c.dims.map((d) => d.column)];

/** CREATE TABLE for one cube, with the summed columns `metrics` (migration 9's: {@link METRICS_V9}). */
function createTable(c: Cube, dialect: Dialect, metrics: readonly string[]): string {
  const columns = [
    'level INTEGER NOT NULL',
    'bucket BIGINT NOT NULL',
    ...c.dims.map((d) => `${d.column} ${d.type === 'text' ? 'TEXT' : 'INTEGER'} NOT NULL`),
    ...metrics.map((m) => `${m} ${m === 'cost_sum' || m === 'latency_sum' ? 'DOUBLE PRECISION' : 'BIGINT'} NOT NULL`),
    ...EXTREMES.map((e) => `${e} BIGINT NOT NULL`),
    ...BIN_COLUMNS.map((h) => `${h} INTEGER NOT NULL`),
    `PRIMARY KEY (${keyColumns(c).join(', ')})`,
  ];
  // SQLite: the key is the table (no rowid and second copy of the key), as a range of buckets is read by it.
  return `CREATE TABLE ${c.table} (\n  ${columns.join(',\n  ')}\n)${dialect === 'sqlite' ? ' WITHOUT ROWID' : ''}`;
}

/** How far back a back-fill builds minute rollups: their default retention (older ones would be deleted at once). */
const BACKFILL_MINUTES_MS = 48 * 3_600_000;

/** Now in epoch ms, in SQL. */
const NOW_MS: Record<Dialect, string> = {
  sqlite: "(CAST(strftime('%s', 'now') AS INTEGER) * 1000)",
  postgres: '(CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) * 1000)',
};

/**
 * One cube at the minute or hour level, filled from gateway_logs (minutes: from the state's minute floor,
 * set to 48 hours before now first). Two steps, as the bins are columns: the rows grouped by key and
 * latency bin (cheap), then those groups pivoted into one row per key (142 conditional sums, but over far
 * fewer rows than the log has).
 */
function backfillFromRows(c: Cube, level: number, metrics: readonly string[]): string {
  const dims = c.dims.map((d, i) => `${dimSql(d)} AS d${i}`);
  const dimNames = c.dims.map((_, i) => `d${i}`);
  const inner = [...metrics, ...EXTREMES].map((name) => `${SCAN_EXPRESSIONS[name as keyof typeof SCAN_EXPRESSIONS]} AS ${name}`);
  const since = level === MINUTE ? ` WHERE created_at >= (SELECT value FROM ${STATE_TABLE} WHERE name = 'minute_floor')` : '';
  const outer = [
    ...metrics.map((m) => `COALESCE(SUM(${m}), 0)`),
    'MIN(first_seen)', 'MAX(last_seen)',
    ...BIN_COLUMNS.map((_, i) => `SUM(CASE WHEN lbin = ${i} THEN latency_n ELSE 0 END)`),
  ];
  return (
    `INSERT INTO ${c.table} (${[...keyColumns(c), ...metrics, ...EXTREMES, ...BIN_COLUMNS].join(', ')}) ` +
    `SELECT ${level}, bucket, ${dimNames.join(', ')}, ${outer.join(', ')} FROM (` +
    `SELECT bucket, ${dimNames.join(', ')}, lbin, ${inner.join(', ')} FROM (` +
    `SELECT gateway_logs.*, created_at - created_at % ${level} AS bucket, ${dims.join(', ')}, ${LATENCY_BIN_SQL} AS lbin FROM gateway_logs${since}) l ` +
    `GROUP BY bucket, ${dimNames.join(', ')}, lbin) g GROUP BY bucket, ${dimNames.join(', ')}`
  );
}

/** One cube's day rollups, summed from its hour rollups. */
function backfillDays(c: Cube, metrics: readonly string[]): string {
  const key = c.dims.map((d) => d.column);
  const sums = [...metrics, ...BIN_COLUMNS].map((m) => `SUM(${m})`);
  const values = [...metrics, 'first_seen', 'last_seen', ...BIN_COLUMNS];
  const select = [...sums.slice(0, metrics.length), 'MIN(first_seen)', 'MAX(last_seen)', ...sums.slice(metrics.length)];
  return (
    `INSERT INTO ${c.table} (level, bucket, ${key.join(', ')}, ${values.join(', ')}) ` +
    `SELECT ${DAY}, bucket - bucket % ${DAY}, ${key.join(', ')}, ${select.join(', ')} FROM ${c.table} WHERE level = ${HOUR} ` +
    `GROUP BY bucket - bucket % ${DAY}, ${key.join(', ')}`
  );
}

/** Every rollup of one cube built from the rows stored: hours, days from the hours, and minutes from the minute floor on. */
function backfill(c: Cube, metrics: readonly string[] = METRICS): string[] {
  return [backfillFromRows(c, HOUR, metrics), backfillDays(c, metrics), backfillFromRows(c, MINUTE, metrics)];
}

/** Sets the minute floor to the minute 48 hours before now: minutes before it are read from the rows. */
const setMinuteFloor = (dialect: Dialect) =>
  `UPDATE ${STATE_TABLE} SET value = ${NOW_MS[dialect]} - ${BACKFILL_MINUTES_MS} - (${NOW_MS[dialect]} - ${BACKFILL_MINUTES_MS}) % ${MINUTE} WHERE name = 'minute_floor'`;

/**
 * The rollups' migration: the tables, the state, and every row stored so far rolled up (the migration
 * runs before the writer starts, in one transaction, so no row is counted twice or missed).
 */
export function rollupMigration(dialect: Dialect): string {
  // Minutes before the back-filled 48 hours are read from the rows, as after a retention clean-up.
  const statements = [`CREATE TABLE ${STATE_TABLE} (name TEXT PRIMARY KEY, value BIGINT NOT NULL)`, `INSERT INTO ${STATE_TABLE} (name, value) VALUES ('minute_floor', 0)`, setMinuteFloor(dialect)];
  for (const c of CUBES) statements.push(createTable(c, dialect, METRICS_V9), ...backfill(c, METRICS_V9));
  return statements.join(';\n');
}

/**
 * The statements filling a summed column just added to one cube from the rows still stored: each level's buckets
 * summed from the rows (minutes from the minute floor on), into the rollup rows that exist; buckets whose rows
 * retention already removed keep 0. Migration 12's text is built by it, so what it writes never changes.
 */
function backfillColumn(c: Cube, column: string): string[] {
  const statements: string[] = [];
  const dims = c.dims.map((d, i) => `${dimSql(d)} AS d${i}`);
  const names = c.dims.map((_, i) => `d${i}`);
  for (const level of LEVELS) {
    const since = level === MINUTE ? ` AND created_at >= (SELECT value FROM ${STATE_TABLE} WHERE name = 'minute_floor')` : '';
    const match = c.dims.map((d, i) => ` AND ${c.table}.${d.column} = s.d${i}`).join('');
    statements.push(
      `UPDATE ${c.table} SET ${column} = s.c FROM (` +
        `SELECT created_at - created_at % ${level} AS bucket${dims.map((d) => `, ${d}`).join('')}, SUM(${column}) AS c FROM gateway_logs ` +
        `WHERE ${column} > 0${since} GROUP BY created_at - created_at % ${level}${names.length === 0 ? '' : `, ${c.dims.map((d) => dimSql(d)).join(', ')}`}` +
        `) AS s WHERE ${c.table}.level = ${level} AND ${c.table}.bucket = s.bucket${match}`,
    );
  }
  return statements;
}

/**
 * Migration 12: `cached_tokens` in every rollup, filled from the rows still stored (each level's buckets
 * summed from the rows, minutes from the minute floor on); buckets whose rows retention already removed keep 0.
 */
export function cachedTokensMigration(): string {
  const statements: string[] = [];
  for (const c of CUBES) statements.push(`ALTER TABLE ${c.table} ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0`, ...backfillColumn(c, 'cached_tokens'));
  return statements.join(';\n');
}

/**
 * Migration 14: the cache writes in the log rows (`cache_write_tokens` and its 1-hour part `cache_write_1h_tokens`,
 * null in the rows stored before: no version before recorded them), and `reasoning_tokens` and `cache_write_tokens`
 * summed in every rollup. Reasoning tokens are filled from the rows still stored, as migration 12 filled cached
 * tokens; cache writes start at 0 (no row stored before holds any). Built from the cubes, frozen with the migration.
 */
export function tokenKindsMigration(): string {
  const statements = ['ALTER TABLE gateway_logs ADD COLUMN cache_write_tokens BIGINT', 'ALTER TABLE gateway_logs ADD COLUMN cache_write_1h_tokens BIGINT'];
  for (const c of CUBES) {
    statements.push(
      `ALTER TABLE ${c.table} ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0`,
      `ALTER TABLE ${c.table} ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0`,
      ...backfillColumn(c, 'reasoning_tokens'),
    );
  }
  return statements.join(';\n');
}

/** One rollup row's change: its key and what to add. */
interface Delta {
  level: number;
  bucket: number;
  dims: (string | number)[];
  agg: Agg;
}

/**
 * What a batch of entries adds to each cube, one delta per (level, bucket, key). Entries are added to
 * the minute deltas (their latency bin computed once); the hour and day deltas are the minute ones
 * summed, so each entry is added five times (once per cube), not fifteen: a batch of steady traffic
 * has a few minute deltas per cube.
 */
export function rollupDeltas(entries: readonly LogEntry[]): Map<Cube, Delta[]> {
  const out = new Map<Cube, Delta[]>();
  const bins = entries.map((e) => (e.latency_ms === null || e.latency_ms === undefined ? -1 : binOf(e.latency_ms)));
  for (const c of CUBES) {
    // By key: that key's deltas in the batch (one per minute, more when the batch crosses a minute's end).
    const byKey = new Map<string, Delta[]>();
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const row = e as unknown as Record<string, unknown>;
      let base = '';
      for (const d of c.dims) base += `${dimValue(d, row[d.column])}\u0001`;
      let deltas = byKey.get(base);
      if (deltas === undefined) byKey.set(base, (deltas = []));
      const bucket = e.created_at - (e.created_at % MINUTE);
      let delta = deltas.find((d) => d.bucket === bucket);
      if (delta === undefined) deltas.push((delta = { level: MINUTE, bucket, dims: c.dims.map((d) => dimValue(d, row[d.column])), agg: emptyAgg() }));
      addEntry(delta.agg, e, bins[i]!);
    }
    const list: Delta[] = [];
    for (const minutes of byKey.values()) {
      list.push(...minutes);
      for (const level of LEVELS) {
        if (level === MINUTE) continue;
        const coarse: Delta[] = [];
        for (const m of minutes) {
          const bucket = m.bucket - (m.bucket % level);
          let delta = coarse.find((d) => d.bucket === bucket);
          if (delta === undefined) coarse.push((delta = { level, bucket, dims: m.dims, agg: emptyAgg() }));
          addAgg(delta.agg, m.agg);
        }
        list.push(...coarse);
      }
    }
    out.set(c, list);
  }
  return out;
}

const upsertTexts = new Map<string, string>();

/**
 * Latency bins per group of a one-row upsert (SQLite's): a rollup row's change binds and adds only the groups of bins
 * it has latencies in, the rest are left as they are (and a new row gets 0 there from the statement's text). A batch's
 * change to one key and minute has a few latencies, most in one or two groups of the 142 bins: measured with 50 keys and
 * 20 models, the upserts took about 35 % less CPU than binding and adding every bin (SQL 6.1 against 9.3 µs an entry).
 */
const BIN_GROUP = 18;
/** Every group: what a many-row upsert (PostgreSQL's) binds, as its rows' groups differ. */
const ALL_GROUPS = (1 << Math.ceil(BIN_COLUMNS.length / BIN_GROUP)) - 1;

/** The groups of `bins` holding a latency: bit g for bins g × BIN_GROUP up to the next group. */
function binGroups(bins: readonly number[]): number {
  let mask = 0;
  for (let i = 0; i < bins.length; i++) if (bins[i] !== 0) mask |= 1 << ((i / BIN_GROUP) | 0);
  return mask;
}

const inGroups = (mask: number, bin: number): boolean => ((mask >> ((bin / BIN_GROUP) | 0)) & 1) === 1;

/**
 * The upsert of `rows` rollup rows into a cube, binding the bins of the groups in `mask` (see {@link BIN_GROUP}):
 * counts and those bins added, extremes widened; the other bins are 0 in a new row and left as they are in one stored.
 */
function upsertSql(c: Cube, dialect: Dialect, rows: number, mask: number): string {
  const id = `${c.name}:${dialect}:${rows}:${mask}`;
  let sql = upsertTexts.get(id);
  if (sql !== undefined) return sql;
  const key = keyColumns(c);
  const bins = BIN_COLUMNS.filter((_, i) => inGroups(mask, i));
  const zeros = BIN_COLUMNS.filter((_, i) => !inGroups(mask, i));
  const bound = [...key, ...METRICS, ...EXTREMES, ...bins];
  const one = `(${[...bound.map(() => '?'), ...zeros.map(() => '0')].join(', ')})`;
  const [least, greatest] = dialect === 'sqlite' ? ['min', 'max'] : ['LEAST', 'GREATEST'];
  const set = [
    ...[...METRICS, ...bins].map((m) => `${m} = ${c.table}.${m} + excluded.${m}`),
    `first_seen = ${least}(${c.table}.first_seen, excluded.first_seen)`,
    `last_seen = ${greatest}(${c.table}.last_seen, excluded.last_seen)`,
  ];
  sql = `INSERT INTO ${c.table} (${[...bound, ...zeros].join(', ')}) VALUES ${new Array(rows).fill(one).join(', ')} ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${set.join(', ')}`;
  upsertTexts.set(id, sql);
  return sql;
}

/** Adds a batch of entries to the rollups, through `tx` (the transaction inserting them). */
export async function writeRollups(tx: SqlClient, entries: readonly LogEntry[]): Promise<void> {
  const per = ROWS_PER_STATEMENT[tx.dialect];
  for (const [c, deltas] of rollupDeltas(entries)) {
    for (let i = 0; i < deltas.length; i += per) {
      const count = Math.min(per, deltas.length - i);
      // One row a statement (SQLite): it binds only the bin groups it has latencies in. Many: every bin.
      const mask = per === 1 ? binGroups(deltas[i]!.agg.bins) : ALL_GROUPS;
      const values: unknown[] = [];
      for (let j = i; j < i + count; j++) {
        const { level, bucket, dims, agg } = deltas[j]!;
        values.push(level, bucket, ...dims);
        for (const m of METRICS) values.push(agg[m]);
        values.push(agg.first_seen, agg.last_seen);
        for (let b = 0; b < agg.bins.length; b++) if (inGroups(mask, b)) values.push(agg.bins[b]);
      }
      await tx.run(upsertSql(c, tx.dialect, count, mask), values);
    }
  }
}

/** The earliest time minute rollups are kept for (see {@link deleteRollupsBefore}). */
export async function minuteFloor(client: SqlClient): Promise<number> {
  const row = await client.get<{ value: unknown }>(`SELECT value FROM ${STATE_TABLE} WHERE name = 'minute_floor'`);
  return row === undefined ? 0 : Number(row.value);
}

/**
 * Deletes minute rollups before `minutesBefore` and hour and day rollups before `before` (epoch ms,
 * rounded down to their level, so no bucket is cut). Queries read the log's rows where minute rows
 * are gone (the state's `minute_floor`).
 */
export async function deleteRollupsBefore(client: SqlClient, minutesBefore: number, before: number | null): Promise<void> {
  const floor = minutesBefore - (minutesBefore % MINUTE);
  await client.transaction(async (tx) => {
    for (const c of CUBES) {
      await tx.run(`DELETE FROM ${c.table} WHERE level = ? AND bucket < ?`, [MINUTE, floor]);
      if (before !== null) for (const level of LEVELS) if (level !== MINUTE) await tx.run(`DELETE FROM ${c.table} WHERE level = ? AND bucket < ?`, [level, before - (before % level)]);
    }
    await tx.run(`UPDATE ${STATE_TABLE} SET value = ? WHERE name = 'minute_floor' AND value < ?`, [floor, floor]);
  });
}

/**
 * Rolls every stored row up again, in one transaction, as migration 9 does: hours and days of every row,
 * minutes of the last 48 hours. The rollups then hold exactly the rows (rows deleted by retention drop
 * out of them). For repairs, e.g. after rows were written by an instance that did not keep rollups.
 */
export async function rebuildRollups(client: SqlClient): Promise<void> {
  await client.transaction(async (tx) => {
    await tx.run(setMinuteFloor(tx.dialect));
    for (const c of CUBES) {
      await tx.run(`DELETE FROM ${c.table}`);
      for (const statement of backfill(c)) await tx.run(statement);
    }
  });
}
