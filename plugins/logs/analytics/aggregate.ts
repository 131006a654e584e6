import type { LogEntry } from '../entry.js';
import { EXTREMES, METRICS } from './cubes.js';
import { BIN_COLUMNS, BINS, binOf, binSql } from './sketch.js';

/*
 * What a rollup row, or a set of log rows, adds up to: counts, sums (with how
 * many values each summed, so "no value" stays apart from 0), the first and
 * last time, and the latency sketch. The same figures come from the writer
 * (entries in JS), from a rollup table (summed rows) and from a scan of the log
 * (SQL over gateway_logs), and merge by adding.
 */

/** A request counted as a success: a 2xx or 3xx answer with no gateway error. */
export const SUCCESS_SQL = '(status >= 200 AND status < 400 AND error_code IS NULL)';
export const HIT_SQL = "(cache_status = 'HIT' OR cache_status = 'SEMANTIC HIT')";
/** A request the cache was asked about (any status but DISABLED). */
export const LOOKUP_SQL = "(cache_status IS NOT NULL AND cache_status <> 'DISABLED')";

export type Metric = (typeof METRICS)[number];

export interface Agg extends Record<Metric, number> {
  first_seen: number;
  last_seen: number;
  bins: number[];
}

export function emptyAgg(): Agg {
  return {
    requests: 0, successes: 0, unpriced: 0, cost_sum: 0, cost_n: 0, total_tokens: 0, total_tokens_n: 0, prompt_tokens: 0, prompt_tokens_n: 0,
    completion_tokens: 0, completion_tokens_n: 0, cached_tokens: 0, reasoning_tokens: 0, cache_write_tokens: 0, cache_hits: 0, cache_lookups: 0,
    latency_sum: 0, latency_n: 0,
    first_seen: Infinity, last_seen: -Infinity, bins: new Array<number>(BINS).fill(0),
  };
}

/** Adds one log entry; `bin`, its latency's bin when the caller has it already (binOf). */
export function addEntry(a: Agg, e: LogEntry, bin = e.latency_ms === null || e.latency_ms === undefined ? -1 : binOf(e.latency_ms)): void {
  a.requests++;
  if (e.status >= 200 && e.status < 400 && (e.error_code ?? null) === null) a.successes++;
  if (e.cost_status === 'unpriced') a.unpriced++;
  if (e.cost !== null && e.cost !== undefined) {
    a.cost_sum += e.cost;
    a.cost_n++;
  }
  if (e.total_tokens !== null && e.total_tokens !== undefined) {
    a.total_tokens += e.total_tokens;
    a.total_tokens_n++;
  }
  if (e.prompt_tokens !== null && e.prompt_tokens !== undefined) {
    a.prompt_tokens += e.prompt_tokens;
    a.prompt_tokens_n++;
  }
  if (e.completion_tokens !== null && e.completion_tokens !== undefined) {
    a.completion_tokens += e.completion_tokens;
    a.completion_tokens_n++;
  }
  if (e.cached_tokens !== null && e.cached_tokens !== undefined) a.cached_tokens += e.cached_tokens;
  if (e.reasoning_tokens !== null && e.reasoning_tokens !== undefined) a.reasoning_tokens += e.reasoning_tokens;
  if (e.cache_write_tokens !== null && e.cache_write_tokens !== undefined) a.cache_write_tokens += e.cache_write_tokens;
  const cache = e.cache_status ?? null;
  if (cache !== null && cache !== 'DISABLED') {
    a.cache_lookups++;
    if (cache === 'HIT' || cache === 'SEMANTIC HIT') a.cache_hits++;
  }
  if (e.latency_ms !== null && e.latency_ms !== undefined) {
    a.latency_sum += e.latency_ms;
    a.latency_n++;
    a.bins[bin]!++;
  }
  if (e.created_at < a.first_seen) a.first_seen = e.created_at;
  if (e.created_at > a.last_seen) a.last_seen = e.created_at;
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/**
 * Adds a row a query returned: the metrics and extremes by name, and either the bins `h0`… (a rollup
 * row) or one bin `lbin` holding `latency_n` latencies (a scan grouped by bin).
 */
export function addRow(a: Agg, row: Record<string, unknown>): void {
  for (const m of METRICS) a[m] += num(row[m]);
  const first = row.first_seen;
  const last = row.last_seen;
  if (first !== null && first !== undefined && Number(first) < a.first_seen) a.first_seen = Number(first);
  if (last !== null && last !== undefined && Number(last) > a.last_seen) a.last_seen = Number(last);
  if (row.h0 !== undefined) {
    for (let i = 0; i < BINS; i++) a.bins[i]! += num(row[BIN_COLUMNS[i]!]);
  } else if (row.lbin !== null && row.lbin !== undefined) {
    a.bins[Number(row.lbin)]! += num(row.latency_n);
  }
}

/** Adds another aggregate. */
export function addAgg(a: Agg, b: Agg): void {
  for (const m of METRICS) a[m] += b[m];
  if (b.first_seen < a.first_seen) a.first_seen = b.first_seen;
  if (b.last_seen > a.last_seen) a.last_seen = b.last_seen;
  for (let i = 0; i < BINS; i++) a.bins[i]! += b.bins[i]!;
}

/** Each metric and extreme over gateway_logs rows, as an SQL aggregate (a sum over no value is NULL). */
export const SCAN_EXPRESSIONS: Readonly<Record<Metric | (typeof EXTREMES)[number], string>> = {
  requests: 'COUNT(*)',
  successes: `SUM(CASE WHEN ${SUCCESS_SQL} THEN 1 ELSE 0 END)`,
  unpriced: "SUM(CASE WHEN cost_status = 'unpriced' THEN 1 ELSE 0 END)",
  cost_sum: 'SUM(cost)',
  cost_n: 'COUNT(cost)',
  total_tokens: 'SUM(total_tokens)',
  total_tokens_n: 'COUNT(total_tokens)',
  prompt_tokens: 'SUM(prompt_tokens)',
  prompt_tokens_n: 'COUNT(prompt_tokens)',
  completion_tokens: 'SUM(completion_tokens)',
  completion_tokens_n: 'COUNT(completion_tokens)',
  cached_tokens: 'SUM(cached_tokens)',
  reasoning_tokens: 'SUM(reasoning_tokens)',
  cache_write_tokens: 'SUM(cache_write_tokens)',
  cache_hits: `SUM(CASE WHEN ${HIT_SQL} THEN 1 ELSE 0 END)`,
  cache_lookups: `SUM(CASE WHEN ${LOOKUP_SQL} THEN 1 ELSE 0 END)`,
  latency_sum: 'SUM(latency_ms)',
  latency_n: 'COUNT(latency_ms)',
  first_seen: 'MIN(created_at)',
  last_seen: 'MAX(created_at)',
};

/** The same as a select list, named as in {@link Agg}. */
export const SCAN_AGGREGATES = Object.entries(SCAN_EXPRESSIONS).map(([name, sql]) => `${sql} AS ${name}`).join(', ');

/** The bin of a scanned row's latency, in SQL. */
export const LATENCY_BIN_SQL = binSql('latency_ms');

/** The metrics, extremes and bins of rollup rows, summed. */
export const ROLLUP_AGGREGATES = [...METRICS.map((m) => `SUM(${m}) AS ${m}`), 'MIN(first_seen) AS first_seen', 'MAX(last_seen) AS last_seen', ...BIN_COLUMNS.map((h) => `SUM(${h}) AS ${h}`)].join(', ');

/** Every summed column of a rollup row, in table order: metrics, extremes, bins. */
export const ROLLUP_VALUE_COLUMNS: readonly string[] = [...METRICS, ...EXTREMES, ...BIN_COLUMNS];

/** A rollup row's values for an aggregate, in {@link ROLLUP_VALUE_COLUMNS} order. */
export function rollupValues(a: Agg): number[] {
  const out: number[] = [];
  for (const m of METRICS) out.push(a[m]);
  out.push(a.first_seen, a.last_seen);
  for (let i = 0; i < BINS; i++) out.push(a.bins[i]!);
  return out;
}
