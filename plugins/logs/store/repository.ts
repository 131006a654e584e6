import type { TimeBucket } from '../../../sdk/analytics.js';
import type { SqlClient } from '../../../sdk/index.js';
import { COLUMNS, type LogEntry } from '../entry.js';
import { clause, fromRow, insertSql, mapKey, metaSql, metaValue, n, rowValues, whereOf } from './sql.js';

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
  'cost', 'total_tokens', 'avg_tokens', 'avg_input_tokens', 'avg_output_tokens', 'avg_latency', 'p95_latency', 'p99_latency',
  'success_rate', 'error_count', 'cache_hit_rate', 'last_seen', 'first_seen',
] as const;

export type GroupColumn = (typeof GROUP_COLUMNS)[number];

/** One bucket of {@link LogRepository.timeseries} (the SDK's analytics answer types). */
export type { TimeBucket } from '../../../sdk/analytics.js';

/** One group: its key under the groupBy name, `requests`, and the columns asked for. */
export type GroupRow = Record<string, string | number | null>;

/** Columns of a list item: everything but the bodies, hook results and request headers (those are in GET /logs/{id}). */
const LIST_COLUMNS = COLUMNS.filter((c) => c !== 'request_body' && c !== 'response_body' && c !== 'hook_results' && c !== 'request_headers');

/**
 * Rows per INSERT statement. PostgreSQL: 100 (56 columns, about 5,600 parameters, well under its limit),
 * to save round trips. SQLite: 1, since a prepared one-row statement run in a loop is faster in-process
 * than binding a multi-row one (about 15 against 25 µs a row, measured).
 */
const ROWS_PER_INSERT = { postgres: 100, sqlite: 1 } as const;
/** Longest metadata value kept in the filter table; longer ones are still in the entry's `metadata`. */
const MAX_META_KEYS = 64;
const DELETE_CHUNK = 2000;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const SUCCESS = '(status >= 200 AND status < 400 AND error_code IS NULL)';
const HIT = "(cache_status = 'HIT' OR cache_status = 'SEMANTIC HIT')";
const LOOKUP = "(cache_status IS NOT NULL AND cache_status <> 'DISABLED')";


/** The log tables over an SqlClient: batch insert, filtered list with a cursor, one entry, groups, retention. */
export class LogRepository {
  constructor(readonly client: SqlClient) {}

  /** Writes entries (and their metadata filter rows) in one transaction. */
  async insert(entries: readonly LogEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.client.transaction(async (tx) => {
      const per = ROWS_PER_INSERT[tx.dialect];
      for (let i = 0; i < entries.length; i += per) {
        const count = Math.min(per, entries.length - i);
        await tx.run(insertSql(count), count === 1 ? rowValues(entries[i]!) : entries.slice(i, i + count).flatMap(rowValues));
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
          meta.push(e.id, key, metaValue(value), e.created_at);
          if (++rows === per) await flush();
        }
      }
      await flush();
    });
  }

  /** A page of entries, newest first, after `cursor`; one more than `limit` is read to say whether more follow. */
  async list(filters: LogFilters, limit: number, cursor: Cursor | null): Promise<{ data: Record<string, unknown>[]; next: Cursor | null }> {
    const where = whereOf(filters);
    if (cursor !== null) {
      where.sql.push('(created_at < ? OR (created_at = ? AND id < ?))');
      where.params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    const rows = await this.client.all<Record<string, unknown>>(
      `SELECT ${LIST_COLUMNS.join(', ')} FROM gateway_logs l${clause(where.sql)} ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...where.params, limit + 1],
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(fromRow),
      next: rows.length > limit && last !== undefined ? { createdAt: Number(last.created_at), id: String(last.id) } : null,
    };
  }

  /** One entry with every field, or null (also when it belongs to another workspace). */
  async get(id: string, workspace: string | undefined): Promise<Record<string, unknown> | null> {
    const params: unknown[] = [id];
    let sql = `SELECT ${COLUMNS.join(', ')} FROM gateway_logs WHERE id = ?`;
    if (workspace !== undefined) {
      sql += ' AND workspace_id = ?';
      params.push(workspace);
    }
    const row = await this.client.get<Record<string, unknown>>(sql, params);
    return row === undefined ? null : fromRow(row);
  }

  /**
   * Requests grouped by `groupBy`, most requests first, with the chosen columns.
   * Percentiles are nearest-rank over the group's non-null `latency_ms`: sorted
   * ascending, the value at rank ceil(p/100 × n), computed in SQL with window
   * functions (both dialects) as rank (p × n + 99) / 100 in integer arithmetic.
   */
  async groups(groupBy: GroupBy, columns: readonly GroupColumn[], filters: LogFilters, limit: number, offset: number): Promise<{ data: GroupRow[]; hasMore: boolean }> {
    const key = GROUP_KEYS[groupBy];
    const want = new Set(columns);
    const select = [`${key} AS group_key`, 'COUNT(*) AS requests'];
    if (want.has('cost')) select.push('SUM(cost) AS cost', "SUM(CASE WHEN cost_status = 'unpriced' THEN 1 ELSE 0 END) AS unpriced_requests");
    if (want.has('total_tokens')) select.push('SUM(total_tokens) AS total_tokens');
    if (want.has('avg_tokens')) select.push('AVG(total_tokens) AS avg_tokens');
    if (want.has('avg_input_tokens')) select.push('AVG(prompt_tokens) AS avg_input_tokens');
    if (want.has('avg_output_tokens')) select.push('AVG(completion_tokens) AS avg_output_tokens');
    if (want.has('avg_latency')) select.push('AVG(latency_ms) AS avg_latency');
    if (want.has('success_rate') || want.has('error_count')) select.push(`SUM(CASE WHEN ${SUCCESS} THEN 1 ELSE 0 END) AS successes`);
    if (want.has('cache_hit_rate')) select.push(`SUM(CASE WHEN ${HIT} THEN 1 ELSE 0 END) AS cache_hits`, `SUM(CASE WHEN ${LOOKUP} THEN 1 ELSE 0 END) AS cache_lookups`);
    if (want.has('last_seen')) select.push('MAX(created_at) AS last_seen');
    if (want.has('first_seen')) select.push('MIN(created_at) AS first_seen');
    const where = whereOf(filters);
    const rows = await this.client.all<Record<string, unknown>>(
      `SELECT ${select.join(', ')} FROM gateway_logs l${clause(where.sql)} GROUP BY ${key}` +
        ` ORDER BY COUNT(*) DESC, CASE WHEN ${key} IS NULL THEN 1 ELSE 0 END, ${key} LIMIT ? OFFSET ?`,
      [...where.params, limit + 1, offset],
    );
    const page = rows.slice(0, limit);
    const percentiles = want.has('p95_latency') || want.has('p99_latency') ? await this.#percentiles(key, where, [95, 99] as const) : null;
    const data = page.map((r) => {
      const requests = Number(r.requests);
      const out: GroupRow = { [groupBy]: groupBy === 'status_code' ? n(r.group_key) : (r.group_key as string | null), requests };
      const groupKey = mapKey(r.group_key);
      for (const c of columns) {
        switch (c) {
          case 'cost':
            out.cost = n(r.cost);
            out.unpriced_requests = Number(r.unpriced_requests);
            break;
          case 'total_tokens':
            out.total_tokens = n(r.total_tokens) ?? 0;
            break;
          case 'success_rate':
            out.success_rate = Number(r.successes) / requests;
            break;
          case 'error_count':
            out.error_count = requests - Number(r.successes);
            break;
          case 'cache_hit_rate': {
            const lookups = Number(r.cache_lookups);
            out.cache_hit_rate = lookups === 0 ? null : Number(r.cache_hits) / lookups;
            break;
          }
          case 'last_seen':
          case 'first_seen':
            out[c] = new Date(Number(r[c])).toISOString();
            break;
          case 'p95_latency':
          case 'p99_latency':
            out[c] = percentiles!.get(groupKey)?.[c === 'p95_latency' ? 95 : 99] ?? null;
            break;
          default:
            out[c] = n(r[c]);
        }
      }
      return out;
    });
    return { data, hasMore: rows.length > limit };
  }

  /**
   * Nearest-rank latency percentiles per value of `key` (see {@link groups}): one window query whose
   * rows are only the ranks asked for.
   */
  async #percentiles<P extends number>(key: string, where: { sql: string[]; params: unknown[] }, percents: readonly P[]): Promise<Map<string, Record<P, number>>> {
    const conditions = [...where.sql, 'latency_ms IS NOT NULL'];
    const rank = (p: number, total: number) => Math.floor((p * total + 99) / 100);
    const rows = await this.client.all<{ group_key: unknown; latency_ms: unknown; rn: unknown; total: unknown }>(
      `SELECT group_key, latency_ms, rn, total FROM (` +
        `SELECT ${key} AS group_key, latency_ms, ROW_NUMBER() OVER (PARTITION BY ${key} ORDER BY latency_ms, id) AS rn, COUNT(*) OVER (PARTITION BY ${key}) AS total` +
        ` FROM gateway_logs l${clause(conditions)}) ranked WHERE ${percents.map((p) => `rn = (${p} * total + 99) / 100`).join(' OR ')}`,
      where.params,
    );
    const out = new Map<string, Record<P, number>>();
    for (const r of rows) {
      const k = mapKey(r.group_key);
      const total = Number(r.total);
      const rn = Number(r.rn);
      const entry = out.get(k) ?? ({} as Record<P, number>);
      for (const p of percents) if (rn === rank(p, total)) entry[p] = Number(r.latency_ms);
      out.set(k, entry);
    }
    return out;
  }

  /**
   * Requests over time from `from` (inclusive) to `to` (exclusive), in buckets of `bucketMs`, every
   * bucket present (empty ones as zeros, so a chart has no gaps), plus the same figures over the
   * whole range. Bucket i holds entries with `from + i × bucketMs <= created_at < from + (i+1) × bucketMs`.
   */
  async timeseries(filters: LogFilters & { from: number; to: number }, bucketMs: number): Promise<{ buckets: TimeBucket[]; totals: TimeBucket }> {
    if (!Number.isSafeInteger(filters.from) || !Number.isSafeInteger(bucketMs) || bucketMs <= 0) throw new Error('timeseries: from and bucketMs must be integers');
    // Integers checked above, so inlining them is safe; it spares repeating their parameters per use of the key.
    const key = `((created_at - ${filters.from}) / ${bucketMs})`;
    const where = whereOf(filters);
    const select =
      `COUNT(*) AS requests, SUM(CASE WHEN ${SUCCESS} THEN 1 ELSE 0 END) AS successes, SUM(cost) AS cost, ` +
      'SUM(total_tokens) AS total_tokens, SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, ' +
      `SUM(CASE WHEN ${HIT} THEN 1 ELSE 0 END) AS cache_hits, SUM(CASE WHEN ${LOOKUP} THEN 1 ELSE 0 END) AS cache_lookups`;
    // The totals' sums are the buckets' added up; only the percentiles need their own pass over the range.
    const [rows, ranks, totalRanks] = await Promise.all([
      this.client.all<Record<string, unknown>>(`SELECT ${key} AS group_key, ${select} FROM gateway_logs l${clause(where.sql)} GROUP BY ${key}`, where.params),
      this.#percentiles(key, where, [50, 95] as const),
      this.#percentiles('(created_at * 0)', where, [50, 95] as const),
    ]);
    const count = Math.ceil((filters.to - filters.from) / bucketMs);
    const byBucket = new Map(rows.map((r) => [Number(r.group_key), r]));
    const SUMMED = ['requests', 'successes', 'cost', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'cache_hits', 'cache_lookups'] as const;
    const total: Record<string, number> = Object.fromEntries(SUMMED.map((c) => [c, 0]));
    for (const r of rows) for (const c of SUMMED) total[c]! += n(r[c]) ?? 0;
    const bucket = (r: Record<string, unknown> | undefined, p: Record<50 | 95, number> | undefined, time: number): TimeBucket => {
      const requests = r === undefined ? 0 : Number(r.requests);
      const lookups = r === undefined ? 0 : Number(r.cache_lookups);
      return {
        time: new Date(time).toISOString(),
        requests,
        errors: r === undefined ? 0 : requests - Number(r.successes),
        cost: r === undefined ? 0 : (n(r.cost) ?? 0),
        total_tokens: r === undefined ? 0 : (n(r.total_tokens) ?? 0),
        prompt_tokens: r === undefined ? 0 : (n(r.prompt_tokens) ?? 0),
        completion_tokens: r === undefined ? 0 : (n(r.completion_tokens) ?? 0),
        p50_latency: p?.[50] ?? null,
        p95_latency: p?.[95] ?? null,
        cache_hit_rate: lookups === 0 ? null : Number(r!.cache_hits) / lookups,
      };
    };
    const buckets: TimeBucket[] = [];
    for (let i = 0; i < count; i++) buckets.push(bucket(byBucket.get(i), ranks.get(String(i)), filters.from + i * bucketMs));
    return { buckets, totals: bucket(rows.length === 0 ? undefined : total, totalRanks.get('0'), filters.from) };
  }

  /**
   * Deletes entries created before `before` (epoch ms), in chunks so no statement holds the database
   * long, yielding to the event loop between chunks (SQLite statements run on it). Returns entries deleted.
   */
  async deleteBefore(before: number): Promise<number> {
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
    for (;;) {
      const { changes } = await this.client.run(
        `DELETE FROM gateway_log_metadata WHERE log_id IN (SELECT log_id FROM gateway_log_metadata WHERE created_at < ? LIMIT ${DELETE_CHUNK})`,
        [before],
      );
      if (changes < DELETE_CHUNK) break;
      await yieldToEventLoop();
    }
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

