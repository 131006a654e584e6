import type { Registry } from 'prom-client';

/**
 * Counters and histograms recorded on the request path without prom-client's
 * per-call work (a label object built, validated, sorted and hashed on every
 * `inc` and `observe`). A series is found through one Map per label value
 * (below); the registry reads them through the collector interface (`get()`)
 * at scrape time and formats them as it does its own. Label values are
 * bounded by the caller (routes, providers, capped models, error codes).
 */

/**
 * Series by their label values: one Map per label, nested, so finding a
 * series that exists allocates nothing (a key joined from the values would
 * be a new string on every call, a few of them per request).
 */
class SeriesTable<T> {
  readonly #root = new Map<string, unknown>();
  /** Every series, in creation order, for the scrape. */
  readonly all: T[] = [];

  constructor(
    readonly depth: number,
    private readonly labelNames: readonly string[],
    private readonly make: (labels: Record<string, string>) => T,
  ) {}

  /** The series of these label values, made (with its labels object, once) on first use. */
  cell(a: string, b?: string, c?: string, d?: string): T {
    let cell = this.get(a, b, c, d);
    if (cell === undefined) {
      cell = this.make(labelsOf(this.labelNames, a, b, c, d));
      this.add(cell, a, b, c, d);
    }
    return cell;
  }

  get(a: string, b?: string, c?: string, d?: string): T | undefined {
    let node: unknown = this.#root;
    for (let i = 0; i < this.depth; i++) {
      node = (node as Map<string, unknown>).get(i === 0 ? a : i === 1 ? b! : i === 2 ? c! : d!);
      if (node === undefined) return undefined;
    }
    return node as T;
  }

  add(cell: T, a: string, b?: string, c?: string, d?: string): void {
    let map = this.#root;
    for (let i = 0; i < this.depth - 1; i++) {
      const value = i === 0 ? a : i === 1 ? b! : c!;
      let next = map.get(value) as Map<string, unknown> | undefined;
      if (next === undefined) map.set(value, (next = new Map()));
      map = next;
    }
    map.set(this.depth === 1 ? a : this.depth === 2 ? b! : this.depth === 3 ? c! : d!, cell);
    this.all.push(cell);
  }
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
  readonly #cells: SeriesTable<CounterCell>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    this.#cells = new SeriesTable(labelNames.length, labelNames, (labels) => ({ labels, value: 0 }));
    registry.registerMetric(this as never);
  }

  /** Adds `by` (default 1) to the series of these label values (one per label name, in order). */
  add(by: number, a: string, b?: string, c?: string, d?: string): void {
    this.#cells.cell(a, b, c, d).value += by;
  }

  get() {
    const values: { labels: Record<string, string>; value: number }[] = [];
    for (const cell of this.#cells.all) values.push({ labels: cell.labels, value: cell.value });
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
  readonly #cells: SeriesTable<HistogramCell>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[],
    registry: Registry,
  ) {
    this.#cells = new SeriesTable(labelNames.length, labelNames, (labels) => ({ labels, counts: new Float64Array(buckets.length + 1), sum: 0, count: 0 }));
    registry.registerMetric(this as never);
  }

  observe(value: number, a: string, b?: string, c?: string, d?: string): void {
    const cell = this.#cells.cell(a, b, c, d);
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    cell.counts[i]!++;
    cell.sum += value;
    cell.count++;
  }

  get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const cell of this.#cells.all) {
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
