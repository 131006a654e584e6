import type { Registry } from 'prom-client';

/**
 * Counters and histograms recorded on the request path without prom-client's
 * per-call work (a label object built, validated, sorted and hashed on every
 * `inc` and `observe`). A series is found by its label values joined into one
 * string; the registry reads them through the collector interface (`get()`)
 * at scrape time and formats them as it does its own. Label values are
 * bounded by the caller (routes, providers, capped models, error codes).
 */

const SEP = '\u0000';

/** The map key of up to four label values. */
function keyOf(a: string, b?: string, c?: string, d?: string): string {
  if (b === undefined) return a;
  if (c === undefined) return a + SEP + b;
  if (d === undefined) return a + SEP + b + SEP + c;
  return a + SEP + b + SEP + c + SEP + d;
}

function labelsOf(names: readonly string[], a: string, b?: string, c?: string, d?: string): Record<string, string> {
  const values = [a, b, c, d];
  const labels: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) labels[names[i]!] = values[i] ?? '';
  return labels;
}

interface CounterCell {
  labels: Record<string, string>;
  value: number;
}

/** A counter with up to four labels, given as arguments in `labelNames` order. */
export class FastCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  readonly #cells = new Map<string, CounterCell>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** Adds `by` (default 1) to the series of these label values. */
  add(by: number, a: string, b?: string, c?: string, d?: string): void {
    const key = keyOf(a, b, c, d);
    let cell = this.#cells.get(key);
    if (cell === undefined) {
      cell = { labels: labelsOf(this.labelNames, a, b, c, d), value: 0 };
      this.#cells.set(key, cell);
    }
    cell.value += by;
  }

  get() {
    const values: { labels: Record<string, string>; value: number }[] = [];
    for (const cell of this.#cells.values()) values.push({ labels: cell.labels, value: cell.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

interface HistogramCell {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with up to four labels; `buckets` are upper bounds, ascending. */
export class FastHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #cells = new Map<string, HistogramCell>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  observe(value: number, a: string, b?: string, c?: string, d?: string): void {
    const key = keyOf(a, b, c, d);
    let cell = this.#cells.get(key);
    if (cell === undefined) {
      cell = { labels: labelsOf(this.labelNames, a, b, c, d), counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      this.#cells.set(key, cell);
    }
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    cell.counts[i]!++;
    cell.sum += value;
    cell.count++;
  }

  get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const cell of this.#cells.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += cell.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...cell.labels, le: this.buckets[i]! }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...cell.labels, le: '+Inf' }, value: cell.count });
      values.push({ metricName: `${this.name}_sum`, labels: cell.labels, value: cell.sum });
      values.push({ metricName: `${this.name}_count`, labels: cell.labels, value: cell.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
