import { type GatewayPlugin, LOG_STORE, parseOptions, type RequestContext } from '../../sdk/index.js';
import * as v from 'valibot';

export const PLUGIN_NAME = 'request-log';

/** Which requests get a line: every one, only failures (a status of 500 or more), or `auto`. */
export type RequestLines = 'all' | 'failures' | 'auto';

const OptionsSchema = v.strictObject({
  /** pino level of the per-request line. */
  level: v.optional(v.picklist(['trace', 'debug', 'info', 'warn']), 'info'),
  /**
   * `all`: a line per request. `failures`: only requests that ended with a status of 500 or more
   * (the gateway or its upstream failed). `auto` (default): `failures` when a durable log store is
   * loaded (it keeps every request, queryable), else `all`. See docs/operations.md for the figures.
   */
  lines: v.optional(v.picklist(['all', 'failures', 'auto'], 'must be all, failures or auto'), 'auto'),
});

export type RequestLogOptions = v.InferInput<typeof OptionsSchema>;

const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 1000) / 1000);

/** The fields of the one log line written per request. Credentials are never among them. */
export function requestLogLine(ctx: RequestContext): Record<string, unknown> {
  const line = baseLine(ctx);
  for (const key in ctx.logFields) line[key] = ctx.logFields[key];
  return line;
}

function baseLine(ctx: RequestContext): Record<string, unknown> {
  return {
    trace_id: ctx.traceId,
    span_id: ctx.spanId,
    parent_span_id: ctx.parentSpanId,
    span_name: ctx.spanName,
    method: ctx.method,
    route: ctx.route?.name ?? null,
    path: ctx.path,
    provider: ctx.provider?.name ?? ctx.target?.provider ?? null,
    model: ctx.model,
    stream: ctx.stream,
    status: ctx.status,
    latency_ms: round(ctx.latencyMs),
    upstream_latency_ms: round(ctx.upstreamLatencyMs),
    first_byte_ms: round(ctx.firstByteMs),
    tokens: ctx.usage,
    cache_status: ctx.cacheStatus ?? undefined,
    internal: ctx.internal || undefined,
    key_id: ctx.auth?.keyId ?? null,
    metadata: ctx.metadata,
    target_path: ctx.targetPath,
    attempts: ctx.attempts.length > 0 ? ctx.attempts : undefined,
    // The routing plugin's decisions (targets considered, skipped and why, chosen, affinity).
    routing: ctx.logFields.routing,
    aborted: ctx.aborted || undefined,
    error: ctx.error === null ? undefined : { code: ctx.error.code, message: ctx.error.message },
  };
}

/**
 * One pino line per request (or per failed request), proxied ones included,
 * written after the response ended. With a durable log store loaded, the
 * default keeps stdout to failures: the store has every request already, and
 * a line per request costs more than the store does (docs/operations.md).
 */
export function requestLog(options: RequestLogOptions = {}): GatewayPlugin {
  const { level, lines } = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    // With the log store loaded, `lines: 'auto'` prints failures only (the store keeps every request).
    uses: [LOG_STORE],
    state: [],
    apply(api) {
      const logger = api.logger;
      // Decided once the gateway is assembled: the log store may be listed after this plugin.
      let failuresOnly = lines === 'failures';
      api.onReady(() => {
        if (lines === 'auto') failuresOnly = api.tryResolve(LOG_STORE) !== undefined;
      });
      api.hooks.log.tap(PLUGIN_NAME, (ctx) => {
        if (failuresOnly && ctx.status < 500) return;
        if (logger.isLevelEnabled(level)) logger[level](requestLogLine(ctx), 'request');
      });
    },
  };
}

export default requestLog;
