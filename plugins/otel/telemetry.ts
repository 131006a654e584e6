import type { Histogram, Tracer } from '@opentelemetry/api';

/** What the plugin records into once its SDK is started. */
export interface Telemetry {
  tracer: Tracer | null;
  tokenUsage: Histogram | null;
  duration: Histogram | null;
  timeToFirstChunk: Histogram | null;
  /** The ids the next span takes (see `settableIds`). */
  ids: SettableIds;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * An OpenTelemetry IdGenerator whose next ids can be set: the request's span
 * must carry the span id (and, without a parent, the trace id) the gateway
 * already put in its log, its response headers and the upstream `traceparent`.
 * Spans are started synchronously right after setting them, so nothing
 * interleaves; unset, ids are random.
 */
export interface SettableIds {
  nextTraceId: string | null;
  nextSpanId: string | null;
  generateTraceId(): string;
  generateSpanId(): string;
}

export function settableIds(random: (bytes: number) => string): SettableIds {
  return {
    nextTraceId: null,
    nextSpanId: null,
    generateTraceId() {
      const id = this.nextTraceId ?? random(16);
      this.nextTraceId = null;
      return id;
    },
    generateSpanId() {
      const id = this.nextSpanId ?? random(8);
      this.nextSpanId = null;
      return id;
    },
  };
}

export interface ExportSettings {
  tracesUrl: string | null;
  metricsUrl: string | null;
  headers: Record<string, string>;
  serviceName: string;
  serviceVersion: string;
  metricIntervalMs: number;
  exportTimeoutMs: number;
}

/**
 * Starts the SDK: a tracer provider and a meter provider of this gateway's
 * own (never the global ones), exporting over OTLP/HTTP (JSON). Loaded with
 * dynamic imports, so a gateway without an endpoint never loads OpenTelemetry.
 */
export async function startTelemetry(settings: ExportSettings, random: (bytes: number) => string): Promise<Telemetry> {
  const [{ defaultResource, resourceFromAttributes }, { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION }, { DURATION_BUCKETS, METRIC, TOKEN_BUCKETS }] = await Promise.all([
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
    import('./conventions.js'),
  ]);
  // The SDK's own telemetry.sdk.* attributes plus the service; no host or process detectors run, so nothing about the machine leaves it.
  const resource = defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: settings.serviceVersion }));
  const ids = settableIds(random);
  const stops: (() => Promise<void>)[] = [];
  const telemetry: Telemetry = { tracer: null, tokenUsage: null, duration: null, timeToFirstChunk: null, ids, shutdown: async () => void (await Promise.allSettled(stops.map((s) => s()))) };

  if (settings.tracesUrl !== null) {
    const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/exporter-trace-otlp-http')]);
    const exporter = new OTLPTraceExporter({ url: settings.tracesUrl, headers: settings.headers, timeoutMillis: settings.exportTimeoutMs });
    const provider = new BasicTracerProvider({ resource, idGenerator: ids, spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000, exportTimeoutMillis: settings.exportTimeoutMs })] });
    telemetry.tracer = provider.getTracer('ai-gateway', settings.serviceVersion);
    stops.push(async () => {
      await provider.forceFlush();
      await provider.shutdown();
    });
  }

  if (settings.metricsUrl !== null) {
    const [{ MeterProvider, PeriodicExportingMetricReader }, { OTLPMetricExporter }] = await Promise.all([import('@opentelemetry/sdk-metrics'), import('@opentelemetry/exporter-metrics-otlp-http')]);
    const exporter = new OTLPMetricExporter({ url: settings.metricsUrl, headers: settings.headers, timeoutMillis: settings.exportTimeoutMs });
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: settings.metricIntervalMs, exportTimeoutMillis: Math.min(settings.exportTimeoutMs, settings.metricIntervalMs) });
    const provider = new MeterProvider({ resource, readers: [reader] });
    const meter = provider.getMeter('ai-gateway', settings.serviceVersion);
    telemetry.tokenUsage = meter.createHistogram(METRIC.tokenUsage, { description: 'Number of input and output tokens used.', unit: '{token}', advice: { explicitBucketBoundaries: TOKEN_BUCKETS } });
    telemetry.duration = meter.createHistogram(METRIC.duration, { description: 'GenAI operation duration.', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
    telemetry.timeToFirstChunk = meter.createHistogram(METRIC.timeToFirstChunk, { description: 'Time to receive the first chunk of a streamed answer.', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
    stops.push(async () => {
      await provider.forceFlush();
      await provider.shutdown();
    });
  }
  return telemetry;
}
