import type { TimeBucket } from '../../../sdk/analytics.js';
import type { SqlClient } from '../../../sdk/index.js';
import { COLUMNS, type LogEntry } from '../entry.js';
import { addAgg, emptyAgg, type Agg } from '../analytics/aggregate.js';
import { HOUR, type Cube } from '../analytics/cubes.js';
import { cubeFor, merged } from '../analytics/plan.js';
import { aggregate, NO_DEADLINE, type Deadline } from '../analytics/query.js';
import { deleteRollupsBefore, writeRollups } from '../analytics/rollups.js';
import { percentile } from '../analytics/sketch.js';
import { readBodies, writeBodies, type BodyStore } from './bodies.js';
import { clause, fromRow, insertSql, MAX_META_VALUE, metaSql, metaValue, ROWS_PER_STATEMENT, rowValues, whereOf } from './sql.js';

export { metaValue, rowValues } from './sql.js';

/** Filters shared by the list and the group routes. Undefined means "any". */
export interface LogFilters {
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
  status?: number[];
  /** Matches the provider that answered or the one requested (`@slug`). */
  provider?: string;
  /** Matches the model answered or the one requested. */
  model?: string;
  traceId?: string;
  apiKey?: string;
  config?: string;
  /** The caller's workspace (always set for a workspace-scoped caller). */
  workspace?: string;
  metadata?: ReadonlyArray<readonly [string, string]>;
  cacheStatus?: string;
  route?: string;
  /** The rate limit or budget that refused the request. */
  limitPolicy?: string;
  frontDoor?: string;
  /** The stored prompt, and its version. */
  prompt?: string;
  promptVersion?: number;
  /** The JSON-RPC method of an MCP or A2A call. */
  rpcMethod?: string;
  /** The tool of an MCP tools/call. */
  toolName?: string;
  /** `api` or `housekeeping` (entry.ts, EntryKind). */
  kind?: string;
}

/** Position after the last entry of a page (the list is newest first). */
export interface Cursor {
  createdAt: number;
  id: string;
}

/** The `groupBy` values and the SQL expression each groups on. */
export const GROUP_KEYS = {
  /** The AI service that answered: the provider adapter that made the upstream call (openai, anthropic, …). */
  ai_service: 'provider',
  /** The provider as the request selected it: a `@slug` or virtual key when one was used, else the provider name. */
  provider: 'COALESCE(provider_requested, provider)',
  /** The model the answer named, else the requested one. */
  model: 'COALESCE(model, model_requested)',
  status_code: 'status',
  /** The API format the client spoke: chat, responses, messages (null for other routes). */
  front_door: 'front_door',
  api_key: 'api_key_id',
  config: 'config_id',
  workspace: 'workspace_id',
  /** The stored prompt (prompts route or a config's `prompt_id`). */
  prompt: 'prompt_id',
} as const;

export type GroupBy = keyof typeof GROUP_KEYS;

export const GROUP_COLUMNS = [
  'cost', 'total_tokens', 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens', 'avg_tokens', 'avg_input_tokens', 'avg_output_tokens',
  'avg_latency', 'p95_latency', 'p99_latency', 'success_rate', 'error_count', 'cache_hit_rate', 'last_seen', 'first_seen',
] as const;

export type GroupColumn = (typeof GROUP_COLUMNS)[number];

/** One bucket of {@link LogRepository.timeseries} (the SDK's analytics answer types). */
export type { TimeBucket } from '../../../sdk/analytics.js';

/** One group: its key under the groupBy name, `requests`, and the columns asked for. */
export type GroupRow = Record<string, string | number | null>;

/** Columns of a list item: everything but the bodies, hook results and request headers (those are in GET /logs/{id}). */
const LIST_COLUMNS = COLUMNS.filter((c) => c !== 'request_body' && c !== 'response_body' && c !== 'hook_results' && c !== 'routing' && c !== 'price' && c !== 'request_headers');

/** Longest metadata value kept in the filter table; longer ones are still in the entry's `metadata`. */
const MAX_META_KEYS = 64;
const DELETE_CHUNK = 2000;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Hours with a match a guided list looks up in a rollup at a time (list). */
const GUIDE_HOURS = 48;

/**
 * The rollup a list's filters can be looked up in first: one holding them all, when they name more than
 * time, kind and workspace (those alone match nearly every hour, and the time index serves them).
 */
function guidingCube(filters: LogFilters): Cube | null {
  const selective = Object.entries(filters).some(([name, value]) => value !== undefined && !['from', 'to', 'kind', 'workspace'].includes(name));
  return selective ? cubeFor(filters, null) : null;
}

const mean = (sum: number, count: number): number | null => (count === 0 ? null : sum / count);

/** Group keys in a stable order: numbers by value, text by code unit. */
function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Rollups kept past the rows: minute ones until this time, hour and day ones until this one (null: forever). Epoch ms. */
export interface RollupCutoffs {
  minutesBefore: number;
  before: number | null;
}

/**
 * The log tables over an SqlClient: batch insert, filtered list with a cursor, one entry, groups,
 * retention. Bodies and headers go to `bodies` (store/bodies.ts; default: the side table).
 */
export class LogRepository {
  constructor(
    readonly client: SqlClient,
    readonly bodies: BodyStore = { kind: 'table' },
  ) {}

  /** Writes entries (their bodies, metadata filter rows and rollups with them) in one transaction. */
  async insert(entries: readonly LogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.client.transaction(async (tx) => {
      const refs = await writeBodies(this.bodies, tx, entries);
      const per = ROWS_PER_STATEMENT[tx.dialect];
      for (let i = 0; i < entries.length; i += per) {
        const count = Math.min(per, entries.length - i);
        const values: unknown[] = [];
        for (let j = i; j < i + count; j++) values.push(...rowValues(entries[j]!, refs[j]!));
        await tx.run(insertSql(count), values);
      }
      const meta: unknown[] = [];
      let rows = 0;
      const flush = async () => {
        if (rows === 0) return;
        await tx.run(metaSql(rows), meta);
        meta.length = 0;
        rows = 0;
      };
      for (const e of entries) {
        if (e.metadata === null) continue;
        let keys = 0;
        for (const [key, value] of Object.entries(e.metadata)) {
          if (++keys > MAX_META_KEYS) break;
          meta.push(e.id, key, metaValue(value), e.created_at, e.workspace_id ?? null);
          if (++rows === per) await flush();
        }
      }
      await flush();
      // In the same transaction: the rollups never count a row that is not stored, nor miss one that is.
      await writeRollups(tx, entries);
    });
  }

  /**
   * A page of entries, newest first, after `cursor`; one more than `limit` is read to say whether more
   * follow. A filter a rollup keeps (API key, model, status, …) is first looked up in that rollup's
   * hours: only the hours holding a match are read, newest first, so a rare filter (or one matching
   * nothing) does not walk the whole time index.
   */
  async list(filters: LogFilters, limit: number, cursor: Cursor | null): Promise<{ data: Record<string, unknown>[]; next: Cursor | null }> {
    const where = whereOf(filters);
    if (cursor !== null) {
      where.sql.push('(created_at < ? OR (created_at = ? AND id < ?))');
      where.params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    // A metadata value stored nowhere: nothing to walk the time index for (the key/value index says so at once).
    // Asked within the caller's workspace: whether another workspace stored the value must not show, not even in time.
    for (const [key, value] of filters.metadata ?? []) {
      const any =
        filters.workspace === undefined
          ? await this.client.get('SELECT 1 AS x FROM gateway_log_metadata WHERE meta_key = ? AND meta_value = ? LIMIT 1', [key, value.slice(0, MAX_META_VALUE)])
          : await this.client.get('SELECT 1 AS x FROM gateway_log_metadata WHERE workspace_id = ? AND meta_key = ? AND meta_value = ? LIMIT 1', [filters.workspace, key, value.slice(0, MAX_META_VALUE)]);
      if (any === undefined) return { data: [], next: null };
    }
    const cube = guidingCube(filters);
    const rows = cube === null ? await this.#page(where, null, limit + 1) : await this.#guidedPage(cube, filters, where, cursor, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(fromRow),
      next: rows.length > limit && last !== undefined ? { createdAt: Number(last.created_at), id: String(last.id) } : null,
    };
  }

  /** Up to `count` rows matching `where`, newest first, within `range` (null: anywhere). */
  #page(where: { sql: string[]; params: unknown[] }, range: { from: number; to: number } | null, count: number): Promise<Record<string, unknown>[]> {
    const conditions = [...where.sql];
    const params = [...where.params];
    if (range !== null) {
      conditions.push('created_at >= ?', 'created_at < ?');
      params.push(range.from, range.to);
    }
    return this.client.all<Record<string, unknown>>(`SELECT ${LIST_COLUMNS.join(', ')} FROM gateway_logs l${clause(conditions)} ORDER BY created_at DESC, id DESC LIMIT ?`, [...params, count]);
  }

  /** The rows of {@link list} read only in the hours the rollup says hold a match, newest first. */
  async #guidedPage(cube: Cube, filters: LogFilters, where: { sql: string[]; params: unknown[] }, cursor: Cursor | null, count: number): Promise<Record<string, unknown>[]> {
    const cubeWhere = whereOf({ ...filters, from: undefined, to: undefined });
    const lower = filters.from ?? -Infinity;
    let upper = Math.min(filters.to ?? Infinity, cursor === null ? Infinity : cursor.createdAt + 1);
    const out: Record<string, unknown>[] = [];
    while (out.length < count) {
      const bounds: string[] = [];
      const params: unknown[] = [];
      if (Number.isFinite(upper)) {
        bounds.push('bucket < ?');
        params.push(upper);
      }
      if (Number.isFinite(lower)) {
        bounds.push('bucket > ?');
        params.push(lower - HOUR);
      }
      const hours = await this.client.all<{ bucket: unknown }>(
        `SELECT DISTINCT bucket FROM ${cube.table} l${clause([`level = ${HOUR}`, ...bounds, ...cubeWhere.sql])} ORDER BY bucket DESC LIMIT ${GUIDE_HOURS}`,
        [...params, ...cubeWhere.params],
      );
      if (hours.length === 0) break;
      // One statement per run of consecutive hours, newest first: a single range is an index search, where
      // several ORed ranges would have SQLite walk the whole time index in order.
      const runs = merged(hours.map((h) => ({ level: 0, from: Number(h.bucket), to: Number(h.bucket) + HOUR }))).reverse();
      for (const run of runs) {
        out.push(...(await this.#page(where, run, count - out.length)));
        if (out.length >= count) break;
      }
      upper = Number(hours[hours.length - 1]!.bucket);
    }
    return out;
  }

  /** One entry with every field, or null (also when it belongs to another workspace). */
  async get(id: string, workspace: string | undefined): Promise<Record<string, unknown> | null> {
    const params: unknown[] = [id];
    let sql = `SELECT ${COLUMNS.join(', ')}, body_ref FROM gateway_logs WHERE id = ?`;
    if (workspace !== undefined) {
      sql += ' AND workspace_id = ?';
      params.push(workspace);
    }
    const row = await this.client.get<Record<string, unknown>>(sql, params);
    if (row === undefined) return null;
    await readBodies(this.bodies, this.client, row);
    return fromRow(row);
  }

  /**
   * Requests grouped by `groupBy`, most requests first (then by key, no key last), with the chosen
   * columns. Counts, sums and averages are exact; p95 and p99 come from the latency sketches
   * (analytics/sketch.ts): nearest-rank, within 4.8% of the exact value. Served by the rollups where
   * they hold the filters and the grouping, else by a scan of the rows (analytics/query.ts).
   */
  async groups(groupBy: GroupBy, columns: readonly GroupColumn[], filters: LogFilters, limit: number, offset: number, deadline: Deadline = NO_DEADLINE): Promise<{ data: GroupRow[]; hasMore: boolean }> {
    const cells = await aggregate(this.client, { filters, from: filters.from ?? null, to: filters.to ?? null, origin: 0, bucketMs: null, groupBy, deadline }, GROUP_KEYS);
    const sorted = [...cells.values()].sort(
      (a, b) => b.agg.requests - a.agg.requests || (a.key === null ? 1 : 0) - (b.key === null ? 1 : 0) || compareKeys(a.key, b.key),
    );
    const data = sorted.slice(offset, offset + limit).map(({ key, agg }) => {
      const out: GroupRow = { [groupBy]: key === null || key === undefined ? null : groupBy === 'status_code' ? Number(key) : String(key), requests: agg.requests };
      for (const c of columns) {
        switch (c) {
          case 'cost':
            out.cost = agg.cost_n === 0 ? null : agg.cost_sum;
            out.unpriced_requests = agg.unpriced;
            break;
          case 'total_tokens':
            out.total_tokens = agg.total_tokens;
            break;
          case 'cached_tokens':
            out.cached_tokens = agg.cached_tokens;
            break;
          case 'reasoning_tokens':
            out.reasoning_tokens = agg.reasoning_tokens;
            break;
          case 'cache_write_tokens':
            out.cache_write_tokens = agg.cache_write_tokens;
            break;
          case 'avg_tokens':
            out.avg_tokens = mean(agg.total_tokens, agg.total_tokens_n);
            break;
          case 'avg_input_tokens':
            out.avg_input_tokens = mean(agg.prompt_tokens, agg.prompt_tokens_n);
            break;
          case 'avg_output_tokens':
            out.avg_output_tokens = mean(agg.completion_tokens, agg.completion_tokens_n);
            break;
          case 'avg_latency':
            out.avg_latency = mean(agg.latency_sum, agg.latency_n);
            break;
          case 'success_rate':
            out.success_rate = agg.successes / agg.requests;
            break;
          case 'error_count':
            out.error_count = agg.requests - agg.successes;
            break;
          case 'cache_hit_rate':
            out.cache_hit_rate = agg.cache_lookups === 0 ? null : agg.cache_hits / agg.cache_lookups;
            break;
          case 'last_seen':
            out.last_seen = new Date(agg.last_seen).toISOString();
            break;
          case 'first_seen':
            out.first_seen = new Date(agg.first_seen).toISOString();
            break;
          case 'p95_latency':
            out.p95_latency = percentile(agg.bins, 95);
            break;
          case 'p99_latency':
            out.p99_latency = percentile(agg.bins, 99);
            break;
        }
      }
      return out;
    });
    return { data, hasMore: sorted.length > offset + limit };
  }

  /**
   * Requests over time from `from` (inclusive) to `to` (exclusive), in buckets of `bucketMs` laid from
   * `origin` (default `from`; at most `from`), every bucket present (empty ones as zeros, so a chart has
   * no gaps), plus the same figures over the whole range. Bucket i counts entries with
   * `max(from, origin + i × bucketMs) <= created_at < min(to, origin + (i+1) × bucketMs)`. Latency
   * percentiles as in {@link groups}.
   */
  async timeseries(filters: LogFilters & { from: number; to: number }, bucketMs: number, origin = filters.from, deadline: Deadline = NO_DEADLINE): Promise<{ buckets: TimeBucket[]; totals: TimeBucket }> {
    if (!Number.isSafeInteger(origin) || !Number.isSafeInteger(bucketMs) || bucketMs <= 0 || origin > filters.from) throw new Error('timeseries: origin and bucketMs must be integers, origin at most from');
    const cells = await aggregate(this.client, { filters, from: filters.from, to: filters.to, origin, bucketMs, groupBy: null, deadline }, GROUP_KEYS);
    const byBucket = new Map<number, Agg>();
    const total = emptyAgg();
    for (const { bucket, agg } of cells.values()) {
      byBucket.set(bucket, agg);
      addAgg(total, agg);
    }
    const bucket = (agg: Agg | undefined, time: number): TimeBucket => ({
      time: new Date(time).toISOString(),
      requests: agg?.requests ?? 0,
      errors: agg === undefined ? 0 : agg.requests - agg.successes,
      cost: agg?.cost_sum ?? 0,
      total_tokens: agg?.total_tokens ?? 0,
      prompt_tokens: agg?.prompt_tokens ?? 0,
      completion_tokens: agg?.completion_tokens ?? 0,
      cached_tokens: agg?.cached_tokens ?? 0,
      reasoning_tokens: agg?.reasoning_tokens ?? 0,
      cache_write_tokens: agg?.cache_write_tokens ?? 0,
      p50_latency: agg === undefined ? null : percentile(agg.bins, 50),
      p95_latency: agg === undefined ? null : percentile(agg.bins, 95),
      cache_hit_rate: agg === undefined || agg.cache_lookups === 0 ? null : agg.cache_hits / agg.cache_lookups,
    });
    const count = Math.ceil((filters.to - origin) / bucketMs);
    const buckets: TimeBucket[] = [];
    for (let i = 0; i < count; i++) buckets.push(bucket(byBucket.get(i), origin + i * bucketMs));
    return { buckets, totals: bucket(cells.size === 0 ? undefined : total, filters.from) };
  }

  /**
   * Deletes entries created before `before` (epoch ms), in chunks so no statement holds the database
   * long, yielding to the event loop between chunks (SQLite statements run on it), and the rollups
   * past their own cut-offs (they outlive the rows: docs/logs.md, "Rollups"). Returns entries deleted.
   */
  async deleteBefore(before: number | null, rollups: RollupCutoffs | null = null): Promise<number> {
    if (rollups !== null) await deleteRollupsBefore(this.client, rollups.minutesBefore, rollups.before);
    if (before === null) return 0;
    let deleted = 0;
    for (;;) {
      const { changes } = await this.client.run(
        `DELETE FROM gateway_logs WHERE id IN (SELECT id FROM gateway_logs WHERE created_at < ? ORDER BY created_at LIMIT ${DELETE_CHUNK})`,
        [before],
      );
      deleted += changes;
      if (changes < DELETE_CHUNK) break;
      await yieldToEventLoop();
    }
    for (const table of ['gateway_log_metadata', 'gateway_log_bodies']) {
      const key = table === 'gateway_log_bodies' ? 'id' : 'log_id';
      for (;;) {
        const { changes } = await this.client.run(`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE created_at < ? LIMIT ${DELETE_CHUNK})`, [before]);
        if (changes < DELETE_CHUNK) break;
        await yieldToEventLoop();
      }
    }
    // Whole segments, once every entry in them is older than the cut-off.
    if (this.bodies.kind === 'segments') this.bodies.segments.deleteBefore(before);
    return deleted;
  }

  /** Entries stored (optionally in a workspace). */
  async count(workspace?: string): Promise<number> {
    const row = await this.client.get<{ c: unknown }>(
      workspace === undefined ? 'SELECT COUNT(*) AS c FROM gateway_logs' : 'SELECT COUNT(*) AS c FROM gateway_logs WHERE workspace_id = ?',
      workspace === undefined ? [] : [workspace],
    );
    return Number(row?.c ?? 0);
  }
}

