/**
 * The latency sketch of the rollups: a histogram over log-spaced bins, the
 * bucketing DDSketch uses. Bin 0 holds latencies under 1 ms, bin i (1 to 140)
 * those in [γ^(i-1), γ^i), bin 141 everything from γ^140 (about 10.4 minutes).
 * With γ = 1.1 a percentile read back as its bin's representative value is
 * within 4.8% of the exact nearest-rank value (0.5 ms absolute under 1 ms).
 * Counts add, so sketches merge by adding bins: in SQL (`SUM(h0)`, upserts
 * adding `excluded.h0`) and in JS alike.
 *
 * The bin of a latency is computed the same way in JS (the writer) and in SQL
 * (row scans, the migration's back-fill): floor(ln(x) / ln γ) + 1, with the
 * same constant, so a row lands in the same bin whichever side counts it.
 */

export const GAMMA = 1.1;
/** ln γ, written out so the SQL text carries the very double JS divides by. */
export const LN_GAMMA = 0.09531017980432493;
/** Bins per sketch: under 1 ms, 140 log-spaced ones, and the overflow. */
export const BINS = 142;
const TOP = BINS - 1;
/** Where the overflow bin starts: γ^140 ms. */
export const TOP_BOUND = Math.pow(GAMMA, TOP - 1);
/** Worst relative error of a percentile at or above 1 ms: (γ - 1) / (γ + 1). */
export const RELATIVE_ERROR = (GAMMA - 1) / (GAMMA + 1);

/** The bin of one latency (ms). */
export function binOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  if (ms >= TOP_BOUND) return TOP;
  return Math.floor(Math.log(ms) / LN_GAMMA) + 1;
}

/** The same in SQL, for a column or expression (null stays null). Portable: SQLite (math functions) and PostgreSQL. */
export function binSql(column: string): string {
  return (
    `CASE WHEN ${column} IS NULL THEN NULL WHEN ${column} < 1 THEN 0 WHEN ${column} >= ${TOP_BOUND} THEN ${TOP} ` +
    `ELSE CAST(floor(ln(${column}) / CAST(${LN_GAMMA} AS DOUBLE PRECISION)) AS INTEGER) + 1 END`
  );
}

/**
 * The value a bin stands for: the point within γ-relative reach of both its edges, to a hundredth of a
 * millisecond (an estimate within 4.8% has no use for more digits).
 */
function representative(bin: number): number {
  if (bin === 0) return 0.5;
  const value = bin === TOP ? TOP_BOUND : (2 * Math.pow(GAMMA, bin)) / (GAMMA + 1);
  return Math.round(value * 100) / 100;
}

/** The column names of the bins in a rollup table: h0 … h141. */
export const BIN_COLUMNS: readonly string[] = Array.from({ length: BINS }, (_, i) => `h${i}`);

/**
 * The nearest-rank percentile `p` (0–100) of the latencies counted in `bins`: the representative of
 * the bin holding rank ceil(p × n / 100). Null when nothing was counted.
 */
export function percentile(bins: ArrayLike<number>, p: number): number | null {
  let count = 0;
  for (let i = 0; i < BINS; i++) count += bins[i]!;
  if (count === 0) return null;
  const rank = Math.max(1, Math.ceil((p * count) / 100));
  let seen = 0;
  for (let i = 0; i < BINS; i++) {
    seen += bins[i]!;
    if (seen >= rank) return representative(i);
  }
  return representative(TOP);
}
