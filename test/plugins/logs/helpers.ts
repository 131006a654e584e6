import { createRequire } from 'node:module';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { expect } from 'vitest';
import { GatewayError, type AuthInfo, type GatewayPlugin } from '../../../core/index.js';
import { RELATIVE_ERROR } from '../../../plugins/logs/analytics/sketch.js';
import { newLogId, type LogEntry } from '../../../plugins/logs/entry.js';
import type { GroupBy, LogFilters } from '../../../plugins/logs/store/repository.js';
import { logStore, type LogStoreOptions } from '../../../plugins/logs/index.js';
import { logApi } from '../../../plugins/logs/routes/index.js';
import { metrics, type MetricsOptions } from '../../../plugins/metrics/index.js';
import { pricing, type PricingOptions } from '../../../plugins/pricing/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { providerHeaders } from '../../../plugins/provider-headers/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { traceparent } from '../../../plugins/traceparent/index.js';
import { trace } from '../../../plugins/trace/index.js';
import { validation } from '../../../plugins/validation/index.js';

const require = createRequire(import.meta.url);

export const ADMIN_KEY = 'logs-admin-key-0001';

/**
 * A test auth plugin: `x-gateway-api-key` → the AuthInfo listed for it
 * (workspace and scopes), so one test can have a static-like admin key,
 * workspace keys and keys without the logs scope.
 */
export function keysAuth(keys: Record<string, { workspace: string | null; scopes: string[] }>): GatewayPlugin {
  return {
    name: 'test-keys-auth',
    apply(api) {
      api.hooks.auth.tap('test-keys-auth', (ctx) => {
        const key = ctx.header('x-gateway-api-key');
        const info = key === undefined ? undefined : keys[key];
        if (info === undefined) throw new GatewayError('unauthorized', 'unknown test key');
        return { keyId: `key:${key}`, workspaceId: info.workspace, scopes: info.scopes } satisfies AuthInfo;
      });
    },
  };
}

export async function tempFile(name: string): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'gw-logs-')), name);
}

export interface LogGatewayOptions {
  file: string;
  logs?: LogStoreOptions;
  metrics?: MetricsOptions;
  pricing?: PricingOptions;
  /** Extra plugins applied after the providers (strategies, retry, a custom store…). */
  extra?: GatewayPlugin[];
  /** Replaces the sqlite store plugin (e.g. a slow wrapper registered as `sql`). */
  store?: GatewayPlugin;
  keys?: Record<string, { workspace: string | null; scopes: string[] }>;
}

/** The plugins of a gateway with the log store on a SQLite file, the log API, metrics and traceparent. */
export function logGatewayPlugins(o: LogGatewayOptions): GatewayPlugin[] {
  return [
    trace(),
    traceparent(),
    keysAuth(o.keys ?? { [ADMIN_KEY]: { workspace: null, scopes: ['*'] } }),
    providerHeaders(),
    validation(),
    openai(),
    proxy(),
    ...(o.extra ?? []),
    o.store ?? sqliteStore({ file: o.file }),
    ...(o.pricing === undefined ? [] : [pricing(o.pricing)]),
    logStore({ flushIntervalMs: 50, retentionDays: 0, ...o.logs }),
    logApi(),
    metrics({ defaultMetrics: false, ...o.metrics }),
  ];
}

/** Opens a SQLite file read-only (after the gateway closed it or alongside it: WAL allows readers). */
export function openSqlite(file: string): BetterSqlite3.Database {
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  return new Database(file, { readonly: true });
}

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedMetrics {
  types: Map<string, string>;
  help: Map<string, string>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/**
 * A strict parser of the Prometheus text exposition format (0.0.4): HELP and
 * TYPE lines, samples `name{label="value",…} value [timestamp]` with escaped
 * label values, every sample belonging to a declared family (histogram
 * `_bucket`/`_sum`/`_count`, summary `_sum`/`_count`), histogram buckets
 * cumulative with a `+Inf` bucket equal to `_count`. Throws on the first violation.
 */
export function parsePrometheus(text: string): ParsedMetrics {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${line.slice(0, 120)}`;
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (m === null) {
        if (/^# (HELP|TYPE)/.test(line)) throw new Error(`malformed comment, ${where}`);
        return;
      }
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad metric name, ${where}`);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`bad type, ${where}`);
        if (types.has(name)) throw new Error(`TYPE given twice, ${where}`);
        types.set(name, rest);
      } else help.set(name, rest);
      return;
    }
    let pos = 0;
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    if (nameMatch === null) throw new Error(`bad sample name, ${where}`);
    const name = nameMatch[0];
    pos = name.length;
    const labels: Record<string, string> = {};
    if (line[pos] === '{') {
      pos++;
      while (line[pos] !== '}') {
        const ln = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(pos));
        if (ln === null || !LABEL_NAME.test(ln[0])) throw new Error(`bad label name, ${where}`);
        pos += ln[0].length;
        if (line[pos] !== '=' || line[pos + 1] !== '"') throw new Error(`expected ="…", ${where}`);
        pos += 2;
        let value = '';
        for (;;) {
          const c = line[pos];
          if (c === undefined) throw new Error(`unterminated label value, ${where}`);
          if (c === '\\') {
            const e = line[pos + 1];
            if (e === 'n') value += '\n';
            else if (e === '\\' || e === '"') value += e;
            else throw new Error(`bad escape, ${where}`);
            pos += 2;
            continue;
          }
          if (c === '"') break;
          value += c;
          pos++;
        }
        pos++;
        if (ln[0] in labels) throw new Error(`label repeated, ${where}`);
        labels[ln[0]] = value;
        if (line[pos] === ',') pos++;
        else if (line[pos] !== '}') throw new Error(`expected , or }, ${where}`);
      }
      pos++;
    }
    if (line[pos] !== ' ') throw new Error(`expected a space before the value, ${where}`);
    const parts = line.slice(pos + 1).split(' ');
    if (parts.length > 2) throw new Error(`too many fields, ${where}`);
    const raw = parts[0]!;
    // As Prometheus reads values (Go's strconv.ParseFloat): NaN and Inf in any letter case (prom-client writes `Nan`).
    const special = raw.toLowerCase();
    const value = special === '+inf' || special === 'inf' ? Infinity : special === '-inf' ? -Infinity : special === 'nan' ? NaN : Number(raw);
    if (raw === '' || (Number.isNaN(value) && special !== 'nan')) throw new Error(`bad value, ${where}`);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp, ${where}`);
    const family = familyOf(name, types);
    if (family === null) throw new Error(`sample of an undeclared family, ${where}`);
    samples.push({ name, labels, value });
  });
  // Histograms: cumulative buckets ending in +Inf == _count.
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples) {
      if (s.name !== `${family}_bucket`) continue;
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      let previous = -Infinity;
      for (const b of buckets) {
        if (b.value < previous) throw new Error(`${family}: buckets not cumulative for ${key}`);
        previous = b.value;
      }
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      const count = samples.find((s) => s.name === `${family}_count` && JSON.stringify(s.labels) === key);
      if (inf === undefined || count === undefined || inf.value !== count.value) throw new Error(`${family}: +Inf bucket and _count disagree for ${key}`);
    }
  }
  return { types, help, samples };
}

function familyOf(name: string, types: Map<string, string>): string | null {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count', '_total', '_created']) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const type = types.get(base);
    if (type === 'histogram' && (suffix === '_bucket' || suffix === '_sum' || suffix === '_count')) return base;
    if (type === 'summary' && (suffix === '_sum' || suffix === '_count')) return base;
  }
  return null;
}

/** Sum of the samples of `name` whose labels include `labels`. */
export function metricValue(parsed: ParsedMetrics, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of parsed.samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** What a group route must answer, computed row by row in JS. */
export function bruteGroups(rows: LogEntry[], groupBy: GroupBy): Map<string, Record<string, unknown>> {
  const keyOf = (e: LogEntry): string | number | null => {
    switch (groupBy) {
      case 'ai_service':
        return e.provider;
      case 'provider':
        return e.provider_requested ?? e.provider;
      case 'model':
        return e.model ?? e.model_requested;
      case 'status_code':
        return e.status;
      case 'api_key':
        return e.api_key_id;
      case 'config':
        return e.config_id;
      case 'workspace':
        return e.workspace_id;
      case 'prompt':
        return e.prompt_id;
      case 'front_door':
        return e.front_door;
    }
  };
  const groups = new Map<string, LogEntry[]>();
  const keys = new Map<string, string | number | null>();
  for (const e of rows) {
    const k = keyOf(e);
    const id = String(k);
    groups.set(id, [...(groups.get(id) ?? []), e]);
    keys.set(id, k);
  }
  const avg = (xs: (number | null)[]) => {
    const v = xs.filter((x): x is number => x !== null);
    return v.length === 0 ? null : v.reduce((a, b) => a + b, 0) / v.length;
  };
  const nearestRank = (xs: (number | null)[], p: number) => {
    const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
    if (v.length === 0) return null;
    return v[Math.ceil((p * v.length) / 100) - 1]!;
  };
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, es] of groups) {
    const success = es.filter((e) => e.status >= 200 && e.status < 400 && e.error_code === null).length;
    const lookups = es.filter((e) => e.cache_status !== null && e.cache_status !== 'DISABLED').length;
    const hits = es.filter((e) => e.cache_status === 'HIT' || e.cache_status === 'SEMANTIC HIT').length;
    const costs = es.map((e) => e.cost).filter((c): c is number => c !== null);
    out.set(id, {
      [groupBy]: keys.get(id),
      requests: es.length,
      cost: costs.length === 0 ? null : costs.reduce((a, b) => a + b, 0),
      unpriced_requests: es.filter((e) => e.cost_status === 'unpriced').length,
      total_tokens: es.reduce((a, e) => a + (e.total_tokens ?? 0), 0),
      cached_tokens: es.reduce((a, e) => a + (e.cached_tokens ?? 0), 0),
      reasoning_tokens: es.reduce((a, e) => a + (e.reasoning_tokens ?? 0), 0),
      cache_write_tokens: es.reduce((a, e) => a + (e.cache_write_tokens ?? 0), 0),
      avg_tokens: avg(es.map((e) => e.total_tokens)),
      avg_input_tokens: avg(es.map((e) => e.prompt_tokens)),
      avg_output_tokens: avg(es.map((e) => e.completion_tokens)),
      avg_latency: avg(es.map((e) => e.latency_ms)),
      p95_latency: nearestRank(es.map((e) => e.latency_ms), 95),
      p99_latency: nearestRank(es.map((e) => e.latency_ms), 99),
      success_rate: success / es.length,
      error_count: es.length - success,
      cache_hit_rate: lookups === 0 ? null : hits / lookups,
      last_seen: new Date(Math.max(...es.map((e) => e.created_at))).toISOString(),
      first_seen: new Date(Math.min(...es.map((e) => e.created_at))).toISOString(),
    });
  }
  return out;
}

export function matches(e: LogEntry, f: LogFilters): boolean {
  if (f.workspace !== undefined && e.workspace_id !== f.workspace) return false;
  if (f.from !== undefined && e.created_at < f.from) return false;
  if (f.to !== undefined && e.created_at >= f.to) return false;
  if (f.status !== undefined && !f.status.includes(e.status)) return false;
  if (f.provider !== undefined && e.provider !== f.provider && e.provider_requested !== f.provider) return false;
  if (f.model !== undefined && e.model !== f.model && e.model_requested !== f.model) return false;
  if (f.traceId !== undefined && e.trace_id !== f.traceId) return false;
  if (f.apiKey !== undefined && e.api_key_id !== f.apiKey) return false;
  if (f.config !== undefined && e.config_id !== f.config) return false;
  if (f.cacheStatus !== undefined && e.cache_status !== f.cacheStatus) return false;
  if (f.route !== undefined && e.route !== f.route) return false;
  if (f.limitPolicy !== undefined && e.limit_policy_id !== f.limitPolicy) return false;
  if (f.frontDoor !== undefined && e.front_door !== f.frontDoor) return false;
  if (f.prompt !== undefined && e.prompt_id !== f.prompt) return false;
  if (f.promptVersion !== undefined && e.prompt_version !== f.promptVersion) return false;
  if (f.rpcMethod !== undefined && e.rpc_method !== f.rpcMethod) return false;
  if (f.toolName !== undefined && e.tool_name !== f.toolName) return false;
  if (f.kind !== undefined && e.kind !== f.kind) return false;
  for (const [k, v] of f.metadata ?? []) {
    if (e.metadata === null || !(k in e.metadata)) return false;
    const value = e.metadata[k];
    if ((typeof value === 'string' ? value : JSON.stringify(value)) !== v) return false;
  }
  return true;
}


/** An entry with every field set (nulls and defaults), for store tests. */
/** The LogEntry fields that hold numbers (null in sampleEntry for most): tests give each its own value. */
export const NUMBER_FIELDS: ReadonlySet<string> = new Set(['created_at', 'ended_at', 'prompt_version', 'status', 'latency_ms', 'upstream_latency_ms', 'first_byte_ms', 'ttft_ms', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'cost', 'pricing_multiplier', 'retry_count', 'attempt_count', 'fallback_count']);

export function sampleEntry(overrides: Partial<LogEntry> = {}): LogEntry {
  const created = overrides.created_at ?? Date.UTC(2025, 0, 1);
  return {
    id: newLogId(created),
    created_at: created,
    ended_at: created + 10,
    trace_id: null,
    span_id: null,
    parent_span_id: null,
    span_name: null,
    workspace_id: null,
    api_key_id: null,
    config_id: null,
    prompt_id: null,
    prompt_version: null,
    route: 'chat.completions',
    front_door: 'chat',
    method: 'POST',
    path: '/v1/chat/completions',
    provider_requested: null,
    provider: null,
    model_requested: null,
    model: null,
    target_path: '0',
    status: 200,
    stream: false,
    internal: false,
    aborted: false,
    latency_ms: null,
    upstream_latency_ms: null,
    first_byte_ms: null,
    ttft_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    total_tokens: null,
    cached_tokens: null,
    reasoning_tokens: null,
    cache_write_tokens: null,
    cache_write_1h_tokens: null,
    tokens_estimated: false,
    cost: null,
    cost_status: 'no_usage',
    pricing_multiplier: 1,
    cache_status: null,
    retry_count: 0,
    attempt_count: 1,
    fallback_count: 0,
    attempts: [],
    metadata: null,
    hook_results: null,
    routing: null,
    price: null,
    error_code: null,
    error_message: null,
    limit_policy_id: null,
    rpc_method: null,
    tool_name: null,
    request_headers: null,
    request_body: null,
    request_body_truncated: false,
    response_body: null,
    response_body_truncated: false,
    response_stream: false,
    received_headers: null,
    config_accepted: false,
    kind: 'api',
    ...overrides,
  };
}


/** Latency percentiles come from the rollups' sketches: within their relative error of the exact value (0.5 ms under 1 ms), to 0.01 ms. */
export const SKETCHED = new Set(['p50_latency', 'p95_latency', 'p99_latency']);
export function expectSketched(got: unknown, want: unknown, label: string): void {
  if (want === null) {
    expect(got, label).toBeNull();
    return;
  }
  expect(typeof got, label).toBe('number');
  // Reported to a hundredth of a millisecond: 0.005 more.
  expect(Math.abs((got as number) - (want as number)), label).toBeLessThanOrEqual(Math.max(RELATIVE_ERROR * (want as number), 0.5) + 0.005 + 1e-9);
}

/** A small deterministic PRNG (mulberry32), so a test gets the same rows on every run and on every store. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One time-series bucket computed the slow way: what GET /v1/analytics/timeseries reports for these entries. */
export function bruteBucket(es: LogEntry[], time: number): Record<string, unknown> {
  const rank = (p: number) => {
    const v = es.map((e) => e.latency_ms).filter((l): l is number => l !== null).sort((a, b) => a - b);
    return v.length === 0 ? null : v[Math.ceil((p * v.length) / 100) - 1]!;
  };
  const lookups = es.filter((e) => e.cache_status !== null && e.cache_status !== 'DISABLED');
  const sum = (f: (e: LogEntry) => number | null) => es.reduce((a, e) => a + (f(e) ?? 0), 0);
  return {
    time: new Date(time).toISOString(),
    requests: es.length,
    errors: es.filter((e) => !(e.status >= 200 && e.status < 400 && e.error_code === null)).length,
    cost: sum((e) => e.cost),
    total_tokens: sum((e) => e.total_tokens),
    prompt_tokens: sum((e) => e.prompt_tokens),
    completion_tokens: sum((e) => e.completion_tokens),
    cached_tokens: sum((e) => e.cached_tokens),
    reasoning_tokens: sum((e) => e.reasoning_tokens),
    cache_write_tokens: sum((e) => e.cache_write_tokens),
    p50_latency: rank(50),
    p95_latency: rank(95),
    cache_hit_rate: lookups.length === 0 ? null : lookups.filter((e) => e.cache_status === 'HIT' || e.cache_status === 'SEMANTIC HIT').length / lookups.length,
  };
}
