import { createHash, timingSafeEqual } from 'node:crypto';
import client from 'prom-client';
import * as v from 'valibot';
import {
  bearerToken,
  bundledPricing,
  captureResponses,
  DEFAULT_SCAN_LIMIT,
  GatewayError,
  type GatewayPlugin,
  LOG_STORE,
  type LogStoreStatus,
  parseOptions,
  pricingOf,
  PRICING,
  type PricingTable,
  type RequestContext,
  type RouteDoc,
  requestSummary,
  STREAM_CUT,
  STREAM_RECOVERY,
} from '../../sdk/index.js';
import { FastCounter, FastHistogram } from './fast.js';
import { guardrailOutcomes } from './guardrails.js';

export const PLUGIN_NAME = 'metrics';

/** Latency buckets in seconds: 5 ms to 2 min. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

const OptionsSchema = v.strictObject({
  /** Paths served. Default `/metrics` and `/v1/metrics`. */
  paths: v.optional(v.array(v.pipe(v.string(), v.startsWith('/'))), ['/metrics', '/v1/metrics']),
  /** A bearer token for scrapers (`Authorization: Bearer <token>`). When set, it is the only way in; else the gateway key with `metrics.read` or `*`. */
  token: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))),
  /** Scope a gateway key needs (besides `*`) when no token is set. */
  scope: v.optional(v.pipe(v.string(), v.minLength(1)), 'metrics.read'),
  /** prom-client's default Node metrics (event-loop lag, heap, GC, CPU, handles). */
  defaultMetrics: v.optional(v.boolean(), true),
  /** Prefix of every gateway metric name. */
  prefix: v.optional(v.pipe(v.string(), v.regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/)), 'gateway_'),
  /** Distinct `model` label values kept; later models are counted as `other` (clients choose model names). */
  maxModels: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 200),
});

export type MetricsOptions = v.InferInput<typeof OptionsSchema>;

/**
 * Prometheus metrics with prom-client, in a registry of this gateway's own
 * (two gateways in one process do not mix). Request counts, latency, TTFB and
 * TTFT histograms, tokens, cost, cache, retries and fallbacks, breaker
 * refusals, errors by code, guardrail checks and denials, limit refusals, the
 * log queue, and Node's default metrics. See docs/logs.md.
 */
export function metrics(options: MetricsOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const tokenDigest = opts.token === undefined ? null : digest(opts.token);
  return {
    name: PLUGIN_NAME,
    // The log store's state (its queue, its drops), as series of their own when it is loaded.
    uses: [LOG_STORE, PRICING],
    state: [
      { name: 'series', scope: 'organisation', keyedBy: 'Request, token and cost series for the whole deployment, read only with an organisation-level key or the metrics token.' },
    ],
    apply(api) {
      const registry = new client.Registry();
      const p = opts.prefix;
      if (opts.defaultMetrics) client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });

      const requests = new FastCounter(`${p}requests_total`, 'Requests answered, by route, provider, model and status.', ['route', 'provider', 'model', 'status'], registry);
      const duration = new FastHistogram(`${p}request_duration_seconds`, 'Arrival to end of response.', ['route', 'provider'], LATENCY_BUCKETS, registry);
      const upstream = new FastHistogram(`${p}upstream_duration_seconds`, 'Sending upstream to its response headers, summed over attempts.', ['provider'], LATENCY_BUCKETS, registry);
      const ttft = new FastHistogram(`${p}time_to_first_token_seconds`, 'Arrival to the first byte of a streamed answer.', ['route', 'provider'], LATENCY_BUCKETS, registry);
      const tokens = new FastCounter(`${p}tokens_total`, 'Tokens by kind (prompt, completion; of the prompt: cached, cache_write; of the completion: reasoning); estimated="true" when counted by the gateway.', ['provider', 'model', 'kind', 'estimated'], registry);
      const cost = new FastCounter(`${p}cost_usd_total`, 'Cost of priced requests, in USD, from the pricing file.', ['provider', 'model'], registry);
      const unpriced = new client.Counter({ name: `${p}unpriced_requests_total`, help: 'Requests with token usage but no price for their model (their cost is unknown).', labelNames: ['provider', 'model'], registers: [registry] });
      // Recorded on most requests (DISABLED when the cache is off), so through FastCounter like the other per-request series.
      const cache = new FastCounter(`${p}cache_requests_total`, 'Cache outcomes (HIT, SEMANTIC HIT, MISS, REFRESH, DISABLED).', ['status'], registry);
      const cacheHits = new client.Counter({ name: `${p}cache_hits_total`, help: 'Requests answered from the cache (HIT and SEMANTIC HIT).', registers: [registry] });
      const attempts = new FastCounter(`${p}upstream_attempts_total`, 'Upstream calls, by provider and outcome (status code or error code).', ['provider', 'outcome'], registry);
      const retries = new client.Counter({ name: `${p}retries_total`, help: 'Upstream calls repeated on the same target (retries).', labelNames: ['provider'], registers: [registry] });
      const retried = new client.Counter({ name: `${p}retried_requests_total`, help: 'Requests with at least one retry.', registers: [registry] });
      const fallbacks = new client.Counter({ name: `${p}fallbacks_total`, help: 'Requests whose answer came from another target than the first tried (target path changed).', registers: [registry] });
      const breakerOpen = new client.Counter({ name: `${p}circuit_open_total`, help: 'Attempts refused by an open circuit breaker (503 circuit_open).', labelNames: ['provider'], registers: [registry] });
      const breakerSeen = new client.Gauge({ name: `${p}circuit_open_last_seen_seconds`, help: 'Unix time of the last attempt refused by an open breaker, by provider.', labelNames: ['provider'], registers: [registry] });
      const ttfb = new FastHistogram(`${p}time_to_first_byte_seconds`, 'Arrival to the first byte of the answer sent to the client (streamed or not).', ['route', 'provider'], LATENCY_BUCKETS, registry);
      const errors = new FastCounter(`${p}errors_total`, 'Requests that ended with an error, by route and error code (the code of the error envelope).', ['route', 'code'], registry);
      const guardrailChecks = new FastCounter(`${p}guardrail_checks_total`, 'Guardrail check runs, by phase (before, after), check id and outcome (pass, fail, error).', ['phase', 'check', 'outcome'], registry);
      const guardrailDenied = new client.Counter({ name: `${p}guardrail_denied_total`, help: 'Requests denied by a guardrail hook, by phase.', labelNames: ['phase'], registers: [registry] });
      const streamBreaks = new client.Counter({
        name: `${p}stream_breaks_total`,
        help: 'Streams that broke after they started, where on_stream_failure asked to continue them: by how (connection, error_event, idle_timeout, ended_early) and outcome (continued, or why not).',
        labelNames: ['reason', 'outcome'],
        registers: [registry],
      });
      const streamContinuations = new client.Counter({ name: `${p}stream_continuations_total`, help: 'Continuation calls spliced into a broken stream (on_stream_failure: continue).', registers: [registry] });
      const streamCuts = new client.Counter({ name: `${p}stream_cuts_total`, help: 'Streams the gateway ended early, by reason (guardrail, usage_limit, idle_timeout, upstream_error) and error code.', labelNames: ['reason', 'code'], registers: [registry] });
      const limited = new client.Counter({ name: `${p}limit_rejections_total`, help: 'Requests the gateway itself refused for a limit (a rate limit or budget of the limits plugin, or any 429 or 402 before an upstream call), by error code.', labelNames: ['code'], registers: [registry] });


      let logs: LogStoreStatus | null = null;
      const last = { queue_full: 0, write_failed: 0, shutdown: 0, written: 0, errors: 0 };
      new client.Gauge({
        name: `${p}log_queue_depth`,
        help: 'Log entries held in memory (waiting or being written).',
        registers: [registry],
        collect() {
          this.set(logs?.stats().depth ?? 0);
        },
      });
      new client.Gauge({
        name: `${p}log_queue_capacity`,
        help: 'Most log entries the queue holds before it drops new ones.',
        registers: [registry],
        collect() {
          this.set(logs?.stats().maxEntries ?? 0);
        },
      });
      new client.Gauge({
        name: `${p}log_queue_bytes`,
        help: 'Estimated bytes of the log entries held in memory.',
        registers: [registry],
        collect() {
          this.set(logs?.stats().bytes ?? 0);
        },
      });
      new client.Counter({
        name: `${p}log_dropped_total`,
        help: 'Log entries lost, by reason: queue_full (store too slow), write_failed (store failing), shutdown (close timed out).',
        labelNames: ['reason'],
        registers: [registry],
        collect() {
          const dropped = logs?.stats().dropped;
          for (const reason of ['queue_full', 'write_failed', 'shutdown'] as const) {
            const now = dropped?.[reason] ?? 0;
            this.inc({ reason }, now - last[reason]);
            last[reason] = now;
          }
        },
      });
      new client.Counter({
        name: `${p}log_written_total`,
        help: 'Log entries written to the store.',
        registers: [registry],
        collect() {
          const now = logs?.stats().written ?? 0;
          this.inc(now - last.written);
          last.written = now;
        },
      });
      new client.Counter({
        name: `${p}log_write_errors_total`,
        help: 'Failed attempts at writing a batch of log entries.',
        registers: [registry],
        collect() {
          const now = logs?.stats().writeErrors ?? 0;
          this.inc(now - last.errors);
          last.errors = now;
        },
      });

      const models = new Set<string>();
      const modelLabel = (model: string | null): string => {
        if (model === null) return 'none';
        if (models.has(model)) return model;
        if (models.size >= opts.maxModels) return 'other';
        models.add(model);
        return model;
      };

      let pricing: PricingTable = bundledPricing();
      captureResponses(api, { scanLimit: DEFAULT_SCAN_LIMIT, bodyLimit: 0 });
      api.onReady(() => {
        pricing = pricingOf(api);
        logs = api.tryResolve(LOG_STORE) ?? null;
      });

      const record = (ctx: RequestContext) => {
        const s = requestSummary(ctx, { pricing, wantText: false });
        const route = ctx.route?.name ?? 'unmatched';
        const provider = s.provider ?? 'none';
        const model = modelLabel(s.modelAnswered ?? s.modelRequested);
        requests.add(1, route, provider, model, statusLabel(ctx.status));
        if (ctx.latencyMs !== null) duration.observe(ctx.latencyMs / 1000, route, provider);
        if (ctx.upstreamLatencyMs !== null) upstream.observe(ctx.upstreamLatencyMs / 1000, provider);
        if (ctx.firstByteMs !== null) ttfb.observe(ctx.firstByteMs / 1000, route, provider);
        if (s.ttftMs !== null) ttft.observe(s.ttftMs / 1000, route, provider);
        const u = s.usage;
        if (u !== null && s.costStatus !== 'cache_hit') {
          const estimated = s.tokensEstimated ? 'true' : 'false';
          if (u.prompt_tokens > 0) tokens.add(u.prompt_tokens, provider, model, 'prompt', estimated);
          if (u.completion_tokens > 0) tokens.add(u.completion_tokens, provider, model, 'completion', estimated);
          if ((u.cached_tokens ?? 0) > 0) tokens.add(u.cached_tokens!, provider, model, 'cached', estimated);
          if ((u.reasoning_tokens ?? 0) > 0) tokens.add(u.reasoning_tokens!, provider, model, 'reasoning', estimated);
          if ((u.cache_write_tokens ?? 0) > 0) tokens.add(u.cache_write_tokens!, provider, model, 'cache_write', estimated);
        }
        if (s.cost !== null && s.cost > 0) cost.add(s.cost, provider, model);
        if (s.costStatus === 'unpriced') unpriced.inc({ provider, model });
        if (ctx.cacheStatus !== null) {
          cache.add(1, ctx.cacheStatus);
          if (s.costStatus === 'cache_hit') cacheHits.inc();
        }
        for (const a of ctx.attempts) attempts.add(1, a.provider ?? 'none', a.error ?? (a.status === null ? 'none' : statusLabel(a.status)));
        if (s.retries > 0) {
          retries.inc({ provider }, s.retries);
          retried.inc();
        }
        if (s.fallbacks > 0) fallbacks.inc();
        if (s.circuitOpen > 0) {
          for (const a of ctx.attempts) {
            if (a.error !== 'circuit_open') continue;
            breakerOpen.inc({ provider: a.provider ?? 'none' });
            breakerSeen.set({ provider: a.provider ?? 'none' }, Date.now() / 1000);
          }
        }
        const cut = ctx.get(STREAM_CUT);
        if (cut !== undefined) streamCuts.inc({ reason: cut.reason, code: cut.code });
        const recovery = ctx.get(STREAM_RECOVERY);
        if (recovery !== undefined) {
          for (const b of recovery.breaks) streamBreaks.inc({ reason: b.reason, outcome: b.outcome });
          if (recovery.continuations > 0) streamContinuations.inc(recovery.continuations);
        }
        if (ctx.error !== null) {
          errors.add(1, route, ctx.error.code);
          // A refusal of the limits plugin names its policy (429, or 503 when a fail-closed policy's store is down; 400 for an unpriced model).
          // A stream a budget cut was admitted: it is counted as a cut, not a refusal.
          if (cut === undefined && ctx.logFields.limit_policy_id !== undefined || ((ctx.status === 429 || ctx.status === 402) && ctx.attempts.length === 0)) limited.inc({ code: ctx.error.code });
        }
        const hooks = ctx.logFields.hook_results;
        if (hooks !== undefined) {
          guardrailOutcomes(
            hooks,
            (phase, check, outcome) => guardrailChecks.add(1, phase, check, outcome),
            (phase) => guardrailDenied.inc({ phase }),
          );
        }
      };
      let failedAt = -Infinity;
      api.hooks.log.tap(PLUGIN_NAME, (ctx) => {
        try {
          record(ctx);
        } catch (err) {
          if (Date.now() - failedAt > 60_000) {
            failedAt = Date.now();
            api.logger.error({ err }, 'metrics: recording a request failed');
          }
        }
      });

      const handler = async (ctx: RequestContext) => {
        if (tokenDigest !== null) {
          const given = bearerToken(ctx.headers);
          if (given === undefined || !timingSafeEqual(digest(given), tokenDigest)) {
            throw new GatewayError('unauthorized', 'Send the metrics token as Authorization: Bearer <token>.', { headers: { 'www-authenticate': 'Bearer realm="metrics"' } });
          }
        } else if (ctx.auth !== null && ctx.auth.workspaceId !== null) {
          // The series count every workspace's requests, cost and tokens: a workspace's key would read the others'.
          throw new GatewayError('forbidden', `GET ${ctx.path} shows the whole organisation's traffic and cost: it needs an organisation-level API key (or the metrics token); this key belongs to a workspace.`, {
            param: 'x-gateway-api-key',
          });
        }
        const text = await registry.metrics();
        return { status: 200, headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' }, body: text, observers: null };
      };
      const doc: RouteDoc = {
        summary: 'Prometheus metrics',
        description: 'Requests, latency and TTFT histograms, tokens, cost, cache, retries, fallbacks, breaker and log-store state, in the Prometheus text format.',
        tags: ['Metrics'],
        responseTypes: ['text/plain'],
        ...(tokenDigest === null ? { scope: opts.scope } : { bearer: 'the metrics token (`GATEWAY_METRICS_TOKEN`)' }),
      };
      // Route names are unique: the first path is `metrics`, the others `metrics.2`, `metrics.3`, … (the log's housekeeping list names the first two).
      for (const [i, path] of opts.paths.entries()) {
        api.routes.add({ name: i === 0 ? 'metrics' : `metrics.${i + 1}`, method: 'GET', path, kind: 'handler', body: 'none', auth: tokenDigest === null, ...(tokenDigest === null ? { scope: opts.scope } : {}), doc, handler });
      }
    },
  };
}

/** Status codes as label values, made once each. */
const STATUS_LABELS = new Map<number, string>();
function statusLabel(status: number): string {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) STATUS_LABELS.set(status, (label = String(status)));
  return label;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export default metrics;
