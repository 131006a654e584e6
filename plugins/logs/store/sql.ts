import { BOOLEAN_COLUMNS, COLUMNS, JSON_COLUMNS, type LogEntry } from '../entry.js';
import type { LogFilters } from './repository.js';

/*
 * The log store's SQL, built once per shape: insert texts by row count, the
 * WHERE clause of a filter set, a row's values in column order, and a stored
 * row read back.
 */

/** Longest metadata value kept in the key-value index. */
export const MAX_META_VALUE = 512;

/** A database number (BIGINT comes back as text from PostgreSQL), or null. */
export const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function mapKey(v: unknown): string {
  return v === null || v === undefined ? '\u0000null' : String(v);
}

/**
 * Rows per INSERT (log rows, metadata rows) and per rollup upsert. PostgreSQL: 100 (at most 17,000 parameters,
 * a rollup row's up to 170 a row, well under its limit of 65,535), to save round trips. SQLite: 1, since a
 * prepared one-row statement run in a loop is faster in-process than binding a multi-row one (about 15
 * against 25 µs a row, measured).
 */
export const ROWS_PER_STATEMENT = { postgres: 100, sqlite: 1 } as const;

/** Statement texts by row count, built once (the same string each time also spares hashing it per row). */
const insertTexts = new Map<number, string>();
const metaTexts = new Map<number, string>();

/** The columns an insert writes: every entry column (the body columns left null, see {@link rowValues}), and the body's reference. */
const INSERTED = [...COLUMNS, 'body_ref'];

export function insertSql(rows: number): string {
  let sql = insertTexts.get(rows);
  if (sql === undefined) insertTexts.set(rows, (sql = `INSERT INTO gateway_logs (${INSERTED.join(', ')}) VALUES ${rowsOf(INSERTED.length, rows)}`));
  return sql;
}

/** The columns kept in the body store, not in the row (store/bodies.ts): what only a log's detail shows. */
export const BODY_COLUMNS = ['request_headers', 'hook_results', 'request_body', 'response_body', 'routing', 'price'] as const;

/** What the body store keeps of an entry: its body columns, in {@link BODY_COLUMNS} order; null when all are empty. */
export function bodyOf(e: LogEntry): unknown[] | null {
  const headers = e.request_headers ?? null;
  const hooks = e.hook_results ?? null;
  const request = e.request_body ?? null;
  const response = e.response_body ?? null;
  const routing = e.routing ?? null;
  const price = e.price ?? null;
  return headers === null && hooks === null && request === null && response === null && routing === null && price === null ? null : [headers, hooks, request, response, routing, price];
}

export function metaSql(rows: number): string {
  let sql = metaTexts.get(rows);
  if (sql === undefined) metaTexts.set(rows, (sql = `INSERT INTO gateway_log_metadata (log_id, meta_key, meta_value, created_at, workspace_id) VALUES ${rowsOf(5, rows)}`));
  return sql;
}

export function rowsOf(columns: number, rows: number): string {
  const one = `(${new Array(columns).fill('?').join(', ')})`;
  return new Array(rows).fill(one).join(', ');
}

export function clause(conditions: string[]): string {
  return conditions.length === 0 ? '' : ` WHERE ${conditions.join(' AND ')}`;
}

export function whereOf(f: LogFilters): { sql: string[]; params: unknown[] } {
  const sql: string[] = [];
  const params: unknown[] = [];
  const eq = (column: string, value: unknown) => {
    sql.push(`${column} = ?`);
    params.push(value);
  };
  if (f.workspace !== undefined) eq('workspace_id', f.workspace);
  if (f.from !== undefined) {
    sql.push('created_at >= ?');
    params.push(f.from);
  }
  if (f.to !== undefined) {
    sql.push('created_at < ?');
    params.push(f.to);
  }
  if (f.status !== undefined && f.status.length > 0) {
    sql.push(`status IN (${f.status.map(() => '?').join(', ')})`);
    params.push(...f.status);
  }
  if (f.provider !== undefined) {
    sql.push('(provider = ? OR provider_requested = ?)');
    params.push(f.provider, f.provider);
  }
  if (f.model !== undefined) {
    sql.push('(model = ? OR model_requested = ?)');
    params.push(f.model, f.model);
  }
  if (f.traceId !== undefined) eq('trace_id', f.traceId);
  if (f.apiKey !== undefined) eq('api_key_id', f.apiKey);
  if (f.config !== undefined) eq('config_id', f.config);
  if (f.cacheStatus !== undefined) eq('cache_status', f.cacheStatus);
  if (f.route !== undefined) eq('route', f.route);
  if (f.limitPolicy !== undefined) eq('limit_policy_id', f.limitPolicy);
  if (f.frontDoor !== undefined) eq('front_door', f.frontDoor);
  if (f.prompt !== undefined) eq('prompt_id', f.prompt);
  if (f.promptVersion !== undefined) eq('prompt_version', f.promptVersion);
  if (f.rpcMethod !== undefined) eq('rpc_method', f.rpcMethod);
  if (f.toolName !== undefined) eq('tool_name', f.toolName);
  if (f.kind !== undefined) eq('kind', f.kind);
  for (const [key, value] of f.metadata ?? []) {
    // Scoped like the row: a plan driven from the metadata side reads the workspace's rows only.
    if (f.workspace !== undefined) {
      sql.push('EXISTS (SELECT 1 FROM gateway_log_metadata m WHERE m.workspace_id = ? AND m.meta_key = ? AND m.meta_value = ? AND m.log_id = l.id)');
      params.push(f.workspace, key, value.slice(0, MAX_META_VALUE));
    } else {
      sql.push('EXISTS (SELECT 1 FROM gateway_log_metadata m WHERE m.log_id = l.id AND m.meta_key = ? AND m.meta_value = ?)');
      params.push(key, value.slice(0, MAX_META_VALUE));
    }
  }
  return { sql, params };
}

/** How a metadata value is matched: strings as they are, other values as JSON (`42`, `true`, `{"a":1}`). */
export function metaValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? 'null';
  return text.length > MAX_META_VALUE ? text.slice(0, MAX_META_VALUE) : text;
}

/**
 * The values of one row, in the order of COLUMNS and then `body_ref`: booleans as 0/1, JSON columns as JSON
 * text, the rest as they are (undefined as null); the body columns null, as the body store keeps them and
 * `ref` points there (null: the entry has none). Every column is named here, in order, rather than looked up by name in a
 * loop: the loop (a keyed read per column, a kind check, a push) took about 4.5 µs a row on the writer
 * thread, a sixth of what the SQLite statement itself costs; this takes about 2 µs, most of it the JSON
 * columns' stringify (docs/logs.md, "Cost of logging"). The store
 * contract test writes an entry with a distinct value in every column and reads each back, so a column
 * left out or put out of order fails it.
 */
export function rowValues(e: LogEntry, ref: string | null): unknown[] {
  return [
    e.id, e.created_at, e.ended_at, e.trace_id ?? null, e.span_id ?? null, e.parent_span_id ?? null, e.span_name ?? null,
    e.workspace_id ?? null, e.api_key_id ?? null, e.config_id ?? null, e.prompt_id ?? null, e.prompt_version ?? null,
    e.route ?? null, e.front_door ?? null, e.method, e.path, e.provider_requested ?? null, e.provider ?? null,
    e.model_requested ?? null, e.model ?? null, e.target_path ?? null, e.status,
    e.stream ? 1 : 0, e.internal ? 1 : 0, e.aborted ? 1 : 0, e.latency_ms ?? null, e.upstream_latency_ms ?? null,
    e.first_byte_ms ?? null, e.ttft_ms ?? null, e.prompt_tokens ?? null, e.completion_tokens ?? null, e.total_tokens ?? null,
    e.cached_tokens ?? null, e.reasoning_tokens ?? null, e.cache_write_tokens ?? null, e.cache_write_1h_tokens ?? null,
    e.tokens_estimated ? 1 : 0, e.cost ?? null, e.cost_status, e.pricing_multiplier, e.cache_status ?? null,
    e.retry_count, e.attempt_count, e.fallback_count, json(e.attempts), json(e.metadata), null, null, null,
    e.error_code ?? null, e.error_message ?? null, e.limit_policy_id ?? null, e.rpc_method ?? null, e.tool_name ?? null,
    null, null, e.request_body_truncated ? 1 : 0, null,
    e.response_body_truncated ? 1 : 0, e.kind ?? 'api', ref,
  ];
}

/** A JSON column's text: null and undefined as null. */
export const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

const NUMERIC = new Set([
  'created_at', 'ended_at', 'status', 'latency_ms', 'upstream_latency_ms', 'first_byte_ms', 'ttft_ms', 'prompt_tokens', 'completion_tokens',
  'total_tokens', 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'cost', 'pricing_multiplier', 'retry_count',
  'attempt_count', 'fallback_count', 'prompt_version',
]);

/** A row as the API shows it: times as ISO 8601, JSON parsed, booleans as booleans, numbers as numbers. */
export function fromRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'created_at' || k === 'ended_at') out[k] = new Date(Number(v)).toISOString();
    else if (JSON_COLUMNS.has(k)) out[k] = typeof v === 'string' ? JSON.parse(v) : null;
    else if (BOOLEAN_COLUMNS.has(k)) out[k] = Number(v) === 1;
    else if (NUMERIC.has(k)) out[k] = n(v);
    else out[k] = v ?? null;
  }
  return out;
}
