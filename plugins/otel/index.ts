import * as v from 'valibot';
import { bundledPricing, captureResponses, DEFAULT_SCAN_LIMIT, gatewayPackageVersion, parseOptions, pricingOf, PRICING, randomHex, type GatewayPlugin, type PricingTable, type RequestContext, withoutUserInfo } from '../../sdk/index.js';
import type { ExportSettings, Telemetry } from './telemetry.js';

export const PLUGIN_NAME = 'otel';

const OptionsSchema = v.strictObject({
  /** Base URL of an OTLP/HTTP receiver; traces go to `<endpoint>/v1/traces`, metrics to `<endpoint>/v1/metrics`. Default: OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Full URL for traces (used as it is). Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  tracesEndpoint: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Full URL for metrics (used as it is). Default: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. */
  metricsEndpoint: v.optional(v.pipe(v.string(), v.url('must be a URL'))),
  /** Headers sent with every export (e.g. an API key of the backend). Default: OTEL_EXPORTER_OTLP_HEADERS (`k=v,k2=v2`). */
  headers: v.optional(v.record(v.string(), v.string())),
  /** `service.name` of the resource. Default: OTEL_SERVICE_NAME, else `ai-gateway`. */
  serviceName: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** How often metrics are exported, in ms. Default: OTEL_METRIC_EXPORT_INTERVAL, else 60 s. */
  metricIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100, 'must be at least 100'))),
  /** Longest one export may take, in ms. */
  exportTimeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100, 'must be at least 100')), 10_000),
  /** Where the OTEL_* variables are read; default `process.env`. */
  env: v.optional(v.record(v.string(), v.optional(v.string()))),
});

export type OtelOptions = v.InferInput<typeof OptionsSchema>;

/** Where to export, from the options and the standard OTEL_* variables; null URLs are signals left off. */
export function exportSettings(opts: v.InferOutput<typeof OptionsSchema>): ExportSettings {
  const env = opts.env ?? process.env;
  const off = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const base = (opts.endpoint ?? env.OTEL_EXPORTER_OTLP_ENDPOINT)?.trim().replace(/\/+$/, '') || null;
  const signal = (own: string | undefined, envOwn: string | undefined, path: string, exporter: string | undefined) => {
    if (off || exporter?.trim().toLowerCase() === 'none') return null;
    const url = own ?? (envOwn?.trim() || undefined);
    if (url !== undefined) return url;
    return base === null ? null : `${base}${path}`;
  };
  return {
    tracesUrl: signal(opts.tracesEndpoint, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, '/v1/traces', env.OTEL_TRACES_EXPORTER),
    metricsUrl: signal(opts.metricsEndpoint, env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, '/v1/metrics', env.OTEL_METRICS_EXPORTER),
    headers: opts.headers ?? parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: opts.serviceName ?? (env.OTEL_SERVICE_NAME?.trim() || 'ai-gateway'),
    serviceVersion: gatewayPackageVersion(),
    metricIntervalMs: opts.metricIntervalMs ?? positive(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60_000,
    exportTimeoutMs: opts.exportTimeoutMs,
  };
}

/** `k=v,k2=v2`, values percent-decoded (the OTLP exporter spec's format). */
function parseHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    try {
      out[key] = decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}

function positive(raw: string | undefined): number | undefined {
  const n = Number(raw);
  return raw !== undefined && raw !== '' && Number.isInteger(n) && n >= 100 ? n : undefined;
}

/**
 * OpenTelemetry: a span per request and per upstream attempt, and the GenAI
 * client metrics, exported over OTLP/HTTP with the official SDK, following the
 * GenAI semantic conventions. Off unless an endpoint is configured (the option
 * or OTEL_EXPORTER_OTLP_ENDPOINT and its per-signal variants): then it taps
 * nothing and never loads OpenTelemetry. See docs/opentelemetry.md.
 */
export function otel(options: OtelOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const settings = exportSettings(opts);
  return {
    name: PLUGIN_NAME,
    // The price list for costs (`pricingOf`), the bundled one without the pricing plugin.
    uses: [PRICING],
    state: [],
    apply(api) {
      if (settings.tracesUrl === null && settings.metricsUrl === null) return; // off: no tap, no import
      let telemetry: Telemetry | null = null;
      let record: ((t: Telemetry, ctx: RequestContext, pricing: PricingTable) => void) | null = null;
      let pricing: PricingTable = bundledPricing();
      let failedAt = -Infinity;
      // The answered model, the usage and a stream's first chunk come from the response as it went out.
      captureResponses(api, { scanLimit: DEFAULT_SCAN_LIMIT, bodyLimit: 0 });

      api.onReady(async () => {
        pricing = pricingOf(api);
        const [{ startTelemetry }, recorder] = await Promise.all([import('./telemetry.js'), import('./record.js')]);
        telemetry = await startTelemetry(settings, randomHex);
        record = recorder.recordRequest;
        // An endpoint may carry user info (a collector's basic auth): it is never logged.
        const shown = (url: string | null) => (url === null ? null : withoutUserInfo(url));
        api.logger.info({ traces: shown(settings.tracesUrl), metrics: shown(settings.metricsUrl), service: settings.serviceName }, 'OpenTelemetry export on');
      });

      // After the client has its answer; the SDK batches and exports in the background.
      api.hooks.log.tap(PLUGIN_NAME, (ctx) => {
        if (telemetry === null || record === null) return;
        try {
          record(telemetry, ctx, pricing);
        } catch (err) {
          if (Date.now() - failedAt > 60_000) {
            failedAt = Date.now();
            api.logger.error({ err, trace_id: ctx.traceId }, 'otel: recording a request failed');
          }
        }
      });

      api.onClose(async () => {
        await telemetry?.shutdown();
      });
    },
  };
}

export default otel;
