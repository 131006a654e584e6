import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import { knownTenant, randomHex, requestSummary, w3cTraceId, type PricingTable, type RequestContext, routeApi, STREAM_CUT, STREAM_RECOVERY } from '../../sdk/index.js';
import { ATTR, GATEWAY_ATTR, operationOf, providerName } from './conventions.js';
import type { Telemetry } from './telemetry.js';

const HEX16 = /^[0-9a-f]{16}$/;
const ZERO16 = '0000000000000000';
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;

/** The request's W3C ids: from the `traceparent` the gateway sent upstream (traceparent plugin), else derived here. */
function idsOf(ctx: RequestContext): { traceId: string; spanId: string | null; sampled: boolean } {
  const sent = ctx.logFields.traceparent;
  if (typeof sent === 'string') {
    const m = TRACEPARENT.exec(sent);
    if (m !== null) return { traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 };
  }
  const spanId = ctx.spanId !== null && HEX16.test(ctx.spanId) && ctx.spanId !== ZERO16 ? ctx.spanId : null;
  // Without the trace plugin there is no trace id: a fresh one, not the hash of '' (one trace for every request).
  return { traceId: ctx.traceId === null ? randomHex(16) : w3cTraceId(ctx.traceId), spanId, sampled: true };
}

/** Epoch ms of the request's arrival (its `startedAt` is on the performance clock). */
const arrivalOf = (ctx: RequestContext) => performance.timeOrigin + ctx.startedAt;

/**
 * Records one finished request: a SERVER span for the request (its ids the
 * gateway's own, its parent the caller's `traceparent`), a CLIENT span per
 * upstream attempt under it, and the GenAI metrics. Runs at the `log` hook,
 * after the client has its answer.
 */
export function recordRequest(t: Telemetry, ctx: RequestContext, pricing: PricingTable): void {
  const s = requestSummary(ctx, { pricing, wantText: false });
  const route = ctx.route?.name ?? null;
  const operation = ctx.route === null ? null : operationOf(routeApi(ctx.route));
  const provider = s.provider === null ? null : providerName(s.provider);
  const model = s.modelRequested ?? ctx.model;
  const errorType = ctx.error?.code ?? (ctx.status >= 400 ? String(ctx.status) : null);
  // A model call that ended in error is a failed GenAI operation (the conventions: error.type set, status ERROR),
  // a 4xx included; other routes follow the HTTP server rule, where a client's 4xx is not the server's failure.
  const failed = ctx.status >= 500 || (operation !== null && errorType !== null);
  const seconds = (ctx.latencyMs ?? 0) / 1000;

  // Attributes shared by spans and metrics (the metrics' own set is kept small: it makes series).
  const common: Attributes = {};
  if (operation !== null) common[ATTR.operation] = operation;
  if (provider !== null) common[ATTR.provider] = provider;
  if (model !== null) common[ATTR.requestModel] = model;
  if (s.modelAnswered !== null) common[ATTR.responseModel] = s.modelAnswered;

  if (t.tracer !== null) {
    const ids = idsOf(ctx);
    if (ids.sampled) {
      const arrival = arrivalOf(ctx);
      const attributes: Attributes = { ...common, [ATTR.httpMethod]: ctx.method, [ATTR.httpStatus]: ctx.status, [ATTR.urlPath]: ctx.path };
      if (ctx.route !== null) attributes[ATTR.httpRoute] = ctx.route.path;
      if (ctx.traceId !== null) attributes[GATEWAY_ATTR.traceId] = ctx.traceId;
      if (route !== null) attributes[GATEWAY_ATTR.route] = route;
      if (operation !== null) attributes[GATEWAY_ATTR.stream] = ctx.stream || s.sse;
      if (s.usage !== null) {
        attributes[ATTR.inputTokens] = s.usage.prompt_tokens;
        attributes[ATTR.outputTokens] = s.usage.completion_tokens;
        if (s.usage.cached_tokens !== undefined) attributes[GATEWAY_ATTR.cachedTokens] = s.usage.cached_tokens;
        if (s.usage.reasoning_tokens !== undefined) attributes[GATEWAY_ATTR.reasoningTokens] = s.usage.reasoning_tokens;
        attributes[GATEWAY_ATTR.tokensEstimated] = s.tokensEstimated;
      }
      if (s.providerRequested !== null) attributes[GATEWAY_ATTR.providerRequested] = s.providerRequested;
      if (ctx.targetPath !== null) attributes[GATEWAY_ATTR.targetPath] = ctx.targetPath;
      if (ctx.attempts.length > 0) {
        attributes[GATEWAY_ATTR.attempts] = ctx.attempts.length;
        attributes[GATEWAY_ATTR.retries] = s.retries;
        attributes[GATEWAY_ATTR.fallbacks] = s.fallbacks;
      }
      if (ctx.cacheStatus !== null) attributes[GATEWAY_ATTR.cacheStatus] = ctx.cacheStatus;
      if (s.cost !== null) attributes[GATEWAY_ATTR.cost] = s.cost;
      if (ctx.aborted) attributes[GATEWAY_ATTR.aborted] = true;
      // The routing plugin's decisions: chosen targets, those skipped and why, and whether affinity held.
      const decisions = ctx.logFields.routing as Array<{ chosen: string[]; skipped: Array<{ target: string; reason: string }>; affinity: string | null }> | undefined;
      if (Array.isArray(decisions) && decisions.length > 0) {
        attributes[GATEWAY_ATTR.routingChosen] = decisions.map((d) => d.chosen.join(',')).join(';');
        const skipped = decisions.flatMap((d) => d.skipped.map((s) => `${s.target}:${s.reason}`));
        if (skipped.length > 0) attributes[GATEWAY_ATTR.routingSkipped] = skipped.join(',');
        const affinity = decisions.find((d) => d.affinity !== null)?.affinity;
        if (affinity !== undefined && affinity !== null) attributes[GATEWAY_ATTR.routingAffinity] = affinity;
      }
      const cut = ctx.get(STREAM_CUT);
      if (cut !== undefined) {
        attributes[GATEWAY_ATTR.streamCut] = cut.reason;
        attributes[GATEWAY_ATTR.streamCutBy] = cut.by;
        attributes[GATEWAY_ATTR.streamCutChars] = cut.chars_sent;
      }
      const recovery = ctx.get(STREAM_RECOVERY);
      if (recovery !== undefined && recovery.breaks.length > 0) {
        attributes[GATEWAY_ATTR.streamContinuations] = recovery.continuations;
        attributes[GATEWAY_ATTR.streamBreaks] = recovery.breaks.map((b) => `${b.reason}@${b.afterChars}:${b.outcome}`).join(',');
      }
      // The workspace the request acted in (an organisation-level key's too, when known), else the key's own.
      const workspace = knownTenant(ctx) || ctx.auth?.workspaceId;
      if (workspace) attributes[GATEWAY_ATTR.workspace] = workspace;
      if (ctx.auth?.keyId) attributes[GATEWAY_ATTR.apiKey] = ctx.auth.keyId;
      if (errorType !== null) attributes[ATTR.errorType] = errorType;

      // The caller's span, when it sent one: the request's span is its child, in the caller's trace.
      const parentId = ctx.parentSpanId !== null && HEX16.test(ctx.parentSpanId) && ctx.parentSpanId !== ZERO16 ? ctx.parentSpanId : null;
      const parent: Context = parentId === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { traceId: ids.traceId, spanId: parentId, traceFlags: 1, isRemote: true });
      t.ids.nextTraceId = ids.traceId;
      t.ids.nextSpanId = ids.spanId;
      const name = operation !== null && model !== null ? `${operation} ${model}` : `${ctx.method} ${ctx.route?.path ?? ctx.path}`;
      const span = t.tracer.startSpan(name, { kind: SpanKind.SERVER, startTime: arrival, attributes }, parent);
      t.ids.nextTraceId = null;
      t.ids.nextSpanId = null;
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR, ...(ctx.error === null ? {} : { message: ctx.error.message }) });

      const inside = trace.setSpan(ROOT_CONTEXT, span);
      for (const a of ctx.attempts) {
        const attemptAttributes: Attributes = { [GATEWAY_ATTR.target]: a.target };
        if (operation !== null) attemptAttributes[ATTR.operation] = operation;
        if (a.provider !== null) attemptAttributes[ATTR.provider] = providerName(a.provider);
        if (model !== null) attemptAttributes[ATTR.requestModel] = model;
        if (a.status !== null) attemptAttributes[ATTR.httpStatus] = a.status;
        if (a.error !== null) attemptAttributes[ATTR.errorType] = a.error;
        else if (a.status !== null && a.status >= 400) attemptAttributes[ATTR.errorType] = String(a.status);
        const start = arrival + a.startMs;
        const child = t.tracer.startSpan(
          operation !== null && model !== null ? `${operation} ${model}` : `${ctx.method} upstream`,
          { kind: SpanKind.CLIENT, startTime: start, attributes: attemptAttributes },
          inside,
        );
        // A client span fails on any error or 4xx/5xx (HTTP client rule): a 429 that was retried is still a failed call.
        if (attemptAttributes[ATTR.errorType] !== undefined) child.setStatus({ code: SpanStatusCode.ERROR, ...(a.error === null ? {} : { message: a.error }) });
        child.end(start + a.latencyMs);
      }
      span.end(arrival + (ctx.latencyMs ?? 0));
    }
  }

  // Metrics: model calls only (they are the GenAI client metrics).
  if (operation === null || t.duration === null) return;
  const metricAttributes: Attributes = errorType === null ? common : { ...common, [ATTR.errorType]: errorType };
  t.duration.record(seconds, metricAttributes);
  if (s.usage !== null && s.costStatus !== 'cache_hit') {
    t.tokenUsage!.record(s.usage.prompt_tokens, { ...common, [ATTR.tokenType]: 'input' });
    t.tokenUsage!.record(s.usage.completion_tokens, { ...common, [ATTR.tokenType]: 'output' });
  }
  if (s.ttftMs !== null && (ctx.stream || s.sse)) t.timeToFirstChunk!.record(s.ttftMs / 1000, common);
}
