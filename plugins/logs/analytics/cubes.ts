/**
 * The rollups' shape: which columns of a log row each rollup ("cube") keeps as
 * its key, and the time levels each is kept at. Narrow cubes, so a minute of
 * traffic makes few rows in each: a query is answered by the narrowest cube
 * that holds every column it filters or groups on (see plan.ts), and by a scan
 * of the rows when none does. Every cube has the entry's kind and workspace,
 * which nearly every query filters on.
 *
 * Key columns are never null in a rollup (a unique key treats nulls as
 * distinct): text columns keep '' for null, integers 0.
 */

export interface Dim {
  /** The column, in gateway_logs and in the rollup table. */
  column: string;
  type: 'text' | 'int';
}

export interface Cube {
  name: string;
  table: string;
  dims: readonly Dim[];
}

const text = (column: string): Dim => ({ column, type: 'text' });
const int = (column: string): Dim => ({ column, type: 'int' });
const BASE = [text('kind'), text('workspace_id')];

function cube(name: string, dims: Dim[]): Cube {
  return { name, table: `gateway_log_rollup_${name}`, dims: [...BASE, ...dims] };
}

/** Narrowest first: the planner takes the first that serves a query. */
export const CUBES: readonly Cube[] = [
  cube('total', []),
  cube('status', [int('status'), text('cache_status'), text('front_door'), text('route')]),
  cube('config', [text('config_id'), text('prompt_id'), int('prompt_version')]),
  cube('key', [text('api_key_id'), text('limit_policy_id')]),
  cube('model', [text('provider'), text('provider_requested'), text('model'), text('model_requested')]),
];

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** Coarsest first. Each divides the one before, so a coarser bucket is whole finer ones. */
export const LEVELS: readonly number[] = [DAY, HOUR, MINUTE];

/**
 * The summed columns as migration 9 created them. Frozen: a released migration's text never changes;
 * columns added later are added by a migration of their own (see {@link METRICS}).
 */
export const METRICS_V9 = [
  'requests', 'successes', 'unpriced', 'cost_sum', 'cost_n', 'total_tokens', 'total_tokens_n', 'prompt_tokens', 'prompt_tokens_n',
  'completion_tokens', 'completion_tokens_n', 'cache_hits', 'cache_lookups', 'latency_sum', 'latency_n',
] as const;

/**
 * The summed columns of a rollup row (its key is level, bucket, dims; the latency bins follow): migration 9's, then 12's
 * `cached_tokens`, then 14's `reasoning_tokens` and `cache_write_tokens`.
 */
export const METRICS = [...METRICS_V9, 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens'] as const;
/** Kept as the earliest and latest `created_at` of the row's entries. */
export const EXTREMES = ['first_seen', 'last_seen'] as const;

/** A rollup key column's value for a log row's value: null as the sentinel. */
export function dimValue(dim: Dim, value: unknown): string | number {
  if (value === null || value === undefined) return dim.type === 'text' ? '' : 0;
  return dim.type === 'text' ? String(value) : Number(value);
}

/** The same in SQL, over a gateway_logs column. */
export function dimSql(dim: Dim): string {
  return dim.type === 'text' ? `COALESCE(${dim.column}, '')` : `COALESCE(${dim.column}, 0)`;
}
