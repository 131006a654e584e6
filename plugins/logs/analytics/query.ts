import type { SqlClient } from '../../../sdk/index.js';
import { clause, mapKey, whereOf } from '../store/sql.js';
import type { GroupBy, LogFilters } from '../store/repository.js';
import { addRow, emptyAgg, LATENCY_BIN_SQL, ROLLUP_AGGREGATES, SCAN_AGGREGATES, type Agg } from './aggregate.js';
import { cover, cubeFor, levelsFor, merged, ROLLUP_GROUPS, type Piece } from './plan.js';
import { CUBES, DAY, MINUTE } from './cubes.js';
import { minuteFloor } from './rollups.js';

/** A query ran past its time limit (`deadline`); the routes answer it as an error naming the limit. */
export class QueryTimeoutError extends Error {
  constructor(readonly limitMs: number) {
    super(`the query ran longer than ${limitMs} ms`);
  }
}

/** When a query must end: an instant (epoch ms) and the limit it came from, for the error. */
export interface Deadline {
  at: number;
  limitMs: number;
}

export const NO_DEADLINE: Deadline = { at: Infinity, limitMs: Infinity };

export interface AggregateQuery {
  filters: LogFilters;
  /** Epoch ms, inclusive; null: from the first entry. */
  from: number | null;
  /** Epoch ms, exclusive; null: to the last entry. */
  to: number | null;
  /** Buckets are [origin + i × bucketMs, origin + (i + 1) × bucketMs); null bucketMs: one bucket. */
  origin: number;
  bucketMs: number | null;
  /** The group key; null: no grouping. */
  groupBy: GroupBy | null;
  deadline: Deadline;
}

/** One (bucket, group) of an answer. */
export interface Cell {
  bucket: number;
  key: unknown;
  agg: Agg;
}

/** The original columns of gateway_logs the groupBy values read (store/repository GROUP_KEYS). */
export type GroupSql = Record<GroupBy, string>;

/**
 * A row scan reads at most this much time per statement, and checks the deadline between statements
 * (a SQLite statement cannot be stopped from outside while it runs).
 */
const SCAN_CHUNK_MS = 6 * 3_600_000;
/** Statements a scan is cut into at most, however long its range. */
const MAX_SCAN_CHUNKS = 200;

/**
 * Counts, sums, extremes and latency sketches per (bucket, group) over a range: the whole minutes,
 * hours and days from the narrowest rollup that serves the filters and the grouping, the rest from the
 * rows (a scan grouped in SQL by bucket, group and latency bin). Without a rollup that serves them, all
 * of it from the rows, in chunks of time.
 */
export async function aggregate(client: SqlClient, q: AggregateQuery, rowGroups: GroupSql): Promise<Map<string, Cell>> {
  if (client.dialect !== 'postgres' || !Number.isFinite(q.deadline.at)) return aggregateOn(client, q, rowGroups);
  // PostgreSQL can stop a statement itself: each one gets what is left of the time limit.
  return client.transaction(async (tx) => {
    await tx.run(`SET LOCAL statement_timeout = ${Math.max(1, Math.ceil(q.deadline.at - Date.now()))}`);
    try {
      return await aggregateOn(tx, q, rowGroups);
    } catch (err) {
      // 57014, query_canceled: the statement ran past statement_timeout.
      if ((err as { code?: string }).code === '57014') throw new QueryTimeoutError(q.deadline.limitMs);
      throw err;
    }
  });
}

async function aggregateOn(client: SqlClient, q: AggregateQuery, rowGroups: GroupSql): Promise<Map<string, Cell>> {
  const cells = new Map<string, Cell>();
  const add = (bucket: number, key: unknown, row: Record<string, unknown>) => {
    const id = `${bucket}\u0001${mapKey(key)}`;
    let cell = cells.get(id);
    if (cell === undefined) cells.set(id, (cell = { bucket, key, agg: emptyAgg() }));
    addRow(cell.agg, row);
  };
  // Open ends: from the epoch (rollups may reach further back than the rows), to the end of the last day
  // anything was stored (nothing is after it, and whole days are read from the day rollups, not hour by hour).
  const from = q.from ?? 0;
  const to = q.to ?? Math.ceil(((await lastStored(client, q.filters.workspace)) + 1) / DAY) * DAY;
  if (from >= to) return cells;
  const cube = cubeFor(q.filters, q.groupBy);
  let pieces = cover(from, to, cube === null ? [] : levelsFor(q.origin, q.bucketMs));
  if (pieces.some((p) => p.level === MINUTE)) {
    // Minute rollups older than their retention are gone: those stretches come from the rows.
    const floor = await minuteFloor(client);
    pieces = pieces.flatMap((p) => (p.level !== MINUTE || p.from >= floor ? [p] : p.to <= floor ? [{ ...p, level: 0 }] : [{ level: 0, from: p.from, to: floor }, { ...p, from: floor }]));
  }
  const bucketOf = (time: string) => (q.bucketMs === null ? '0' : `((${time} - ${q.origin}) / ${q.bucketMs})`);
  // Constants are left out of GROUP BY (PostgreSQL reads a constant there as a position or refuses it).
  const groupBy = (...names: string[]) => [...(q.bucketMs === null ? [] : ['bi']), ...(q.groupBy === null ? [] : ['gk']), ...names].join(', ');
  check(q.deadline);
  // The filters but time, the same over the rollups and the rows (their columns have the same names).
  const where = whereOf({ ...q.filters, from: undefined, to: undefined });

  if (cube !== null) {
    const group = q.groupBy === null ? 'NULL' : ROLLUP_GROUPS[q.groupBy].sql;
    for (const level of new Set(pieces.filter((p) => p.level !== 0).map((p) => p.level))) {
      const ranges = merged(pieces.filter((p) => p.level === level));
      const rows = await client.all<Record<string, unknown>>(
        `SELECT ${bucketOf('bucket')} AS bi, ${group} AS gk, ${ROLLUP_AGGREGATES} FROM ${cube.table} l` +
          `${clause([`level = ${level}`, `(${ranges.map(() => '(bucket >= ? AND bucket < ?)').join(' OR ')})`, ...where.sql])}${q.bucketMs === null && q.groupBy === null ? '' : ` GROUP BY ${groupBy()}`}`,
        [...ranges.flatMap((r) => [r.from, r.to]), ...where.params],
      );
      for (const r of rows) add(Number(r.bi), r.gk, r);
      check(q.deadline);
    }
  }

  const scans = merged(pieces.filter((p) => p.level === 0));
  if (scans.length > 0) {
    const group = q.groupBy === null ? 'NULL' : rowGroups[q.groupBy];
    const sql =
      `SELECT ${q.bucketMs === null ? '0' : 'bi'} AS bi, ${q.groupBy === null ? 'NULL' : 'gk'} AS gk, lbin, ${SCAN_AGGREGATES} FROM (SELECT l.*, ${bucketOf('created_at')} AS bi, ${group} AS gk, ${LATENCY_BIN_SQL} AS lbin FROM gateway_logs l` +
      `${clause([...where.sql, 'created_at >= ?', 'created_at < ?'])}) s GROUP BY ${groupBy('lbin')}`;
    for (const chunk of await chunks(client, scans, q.filters.workspace)) {
      const rows = await client.all<Record<string, unknown>>(sql, [...where.params, chunk.from, chunk.to]);
      for (const r of rows) add(Number(r.bi), r.gk, r);
      check(q.deadline);
    }
  }
  return cells;
}

function check(deadline: Deadline): void {
  if (Date.now() > deadline.at) throw new QueryTimeoutError(deadline.limitMs);
}

/**
 * The last time anything was stored (in `workspace`, for a caller confined to one: another
 * workspace's latest entry must not move its answer, nor its time): the last entry's, or the last
 * day rollup's start (entries may be gone); -1 when nothing is.
 */
async function lastStored(client: SqlClient, workspace: string | undefined): Promise<number> {
  const scoped = workspace === undefined ? '' : ' WHERE workspace_id = ?';
  const row = await client.get<{ a: unknown; b: unknown }>(
    `SELECT (SELECT MAX(created_at) FROM gateway_logs${scoped}) AS a, (SELECT MAX(bucket) FROM ${CUBES[0]!.table} WHERE level = ${DAY}${workspace === undefined ? '' : ' AND workspace_id = ?'}) AS b`,
    workspace === undefined ? [] : [workspace, workspace],
  );
  const number = (v: unknown) => (v === null || v === undefined ? -1 : Number(v));
  return Math.max(number(row?.a), number(row?.b));
}

/** The scan's stretches narrowed to where rows are (the caller's workspace's, when it is confined to one), and cut into statements of bounded length. */
async function chunks(client: SqlClient, scans: readonly Piece[], workspace: string | undefined): Promise<Piece[]> {
  const out: Piece[] = [];
  for (const s of scans) {
    let { from, to } = s;
    if (to - from > SCAN_CHUNK_MS) {
      const row =
        workspace === undefined
          ? await client.get<{ a: unknown; b: unknown }>('SELECT MIN(created_at) AS a, MAX(created_at) AS b FROM gateway_logs WHERE created_at >= ? AND created_at < ?', [from, to])
          : await client.get<{ a: unknown; b: unknown }>('SELECT MIN(created_at) AS a, MAX(created_at) AS b FROM gateway_logs WHERE workspace_id = ? AND created_at >= ? AND created_at < ?', [workspace, from, to]);
      if (row === undefined || row.a === null || row.a === undefined) continue;
      from = Number(row.a);
      to = Number(row.b) + 1;
    }
    const step = Math.max(SCAN_CHUNK_MS, Math.ceil((to - from) / MAX_SCAN_CHUNKS));
    for (let t = from; t < to; t += step) out.push({ level: 0, from: t, to: Math.min(to, t + step) });
  }
  return out;
}
