/**
 * The answer of `GET /v1/analytics/timeseries` (the `log-api` plugin), shared by the route, the log
 * store that computes it and the dashboard that draws it. Types only and no imports, so the
 * dashboard's browser bundle can use it without pulling in anything of the server.
 */

/** One bucket of the time series: its start and what happened in it. */
export interface TimeBucket {
  /** Start of the bucket, ISO 8601. */
  time: string;
  requests: number;
  /** Requests that did not succeed (status outside 200-399, or an error code). */
  errors: number;
  cost: number;
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Input tokens the providers answered from their prompt caches (part of `prompt_tokens`). */
  cached_tokens: number;
  /** Output tokens spent on reasoning (part of `completion_tokens`). */
  reasoning_tokens: number;
  /** Input tokens written to the providers' prompt caches (part of `prompt_tokens`, billed above input). */
  cache_write_tokens: number;
  /** Nearest-rank percentiles of `latency_ms`; null without requests. */
  p50_latency: number | null;
  p95_latency: number | null;
  /** Hits over lookups (requests the cache was asked about); null without lookups. */
  cache_hit_rate: number | null;
}

/** The whole answer: the range asked for, the bucket size, the totals over the range and every bucket (empty ones kept). */
export interface TimeseriesAnswer {
  object: 'analytics.timeseries';
  /** ISO 8601, inclusive. */
  from: string;
  /** ISO 8601, exclusive. */
  to: string;
  /** The bucket size as asked (`1m`, `1h`, `1d`, …). */
  interval: string;
  bucket_ms: number;
  totals: TimeBucket;
  data: TimeBucket[];
}
