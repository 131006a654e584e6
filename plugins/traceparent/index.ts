import * as v from 'valibot';
import { parseOptions, randomHex, STAGES, w3cTraceId, type GatewayPlugin } from '../../sdk/index.js';

export const PLUGIN_NAME = 'traceparent';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const HEX16 = /^[0-9a-f]{16}$/;
const ZERO32 = '0'.repeat(32);
const ZERO16 = '0'.repeat(16);

const OptionsSchema = v.strictObject({
  /** Send `traceparent` (and the client's `tracestate`) to the provider. Default true. */
  propagate: v.optional(v.boolean(), true),
});

export type TraceparentOptions = v.InferInput<typeof OptionsSchema>;

/** A parsed W3C traceparent (version 00 fields). */
export interface TraceParent {
  version: string;
  traceId: string;
  parentId: string;
  flags: string;
}

/**
 * Parses a `traceparent` header by the W3C Trace Context rules: lower-case
 * hex, version `ff` invalid, all-zero trace or parent id invalid, version 00
 * with nothing after the flags; a later version may append fields.
 */
export function parseTraceparent(value: string | undefined): TraceParent | null {
  if (value === undefined) return null;
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return null;
  const [, version, traceId, parentId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || traceId === ZERO32 || parentId === ZERO16) return null;
  if (version === '00' && rest !== undefined) return null;
  return { version, traceId, parentId, flags };
}

export { w3cTraceId };

/**
 * W3C Trace Context. An incoming `traceparent` is accepted: its trace id
 * becomes the request's `x-gateway-trace-id` when the client sent none, and
 * its parent id the request's parent span. The gateway takes a span of its
 * own (the client's `x-gateway-span-id` when it is 16 hex digits, else a new
 * one, recorded as the request's span id) and sends the provider
 * `traceparent: 00-<trace id>-<gateway span id>-<flags>`, with the client's
 * `tracestate`. Without an incoming header, the trace id is derived from
 * `x-gateway-trace-id` (see `w3cTraceId`) and the flags are `01` (sampled).
 */
export function traceparent(options: TraceparentOptions = {}): GatewayPlugin {
  const { propagate } = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      // After the trace plugin, which sets the trace id and span headers.
      api.hooks.request.tap({ name: PLUGIN_NAME, stage: STAGES.request.TRACE_CONTEXT }, (ctx) => {
        const incoming = parseTraceparent(ctx.header('traceparent'));
        let traceId: string;
        let flags = '01';
        if (incoming !== null) {
          traceId = incoming.traceId;
          flags = incoming.flags;
          const given = ctx.header('x-gateway-trace-id');
          if (given === undefined || given === '') {
            ctx.traceId = traceId;
            ctx.responseHeaders['x-gateway-trace-id'] = traceId;
          }
          ctx.parentSpanId ??= incoming.parentId;
        } else {
          ctx.traceId ??= randomHex(16);
          traceId = w3cTraceId(ctx.traceId);
        }
        let spanId: string;
        if (ctx.spanId !== null && HEX16.test(ctx.spanId) && ctx.spanId !== ZERO16) {
          spanId = ctx.spanId;
        } else {
          spanId = randomHex(8);
          ctx.spanId ??= spanId;
        }
        const outgoing = `00-${traceId}-${spanId}-${flags}`;
        ctx.logFields.traceparent = outgoing;
        if (!propagate) {
          // The generic proxy forwards client headers as received: without propagation, not the client's traceparent either.
          delete ctx.headers.traceparent;
          return;
        }
        // Every upstream call of the request carries it (with the client's tracestate), the generic proxy's too:
        // upstream headers are laid over the client headers it forwards.
        const upstream = (ctx.upstreamHeaders ??= {});
        upstream.traceparent = outgoing;
        const tracestate = ctx.header('tracestate');
        if (tracestate !== undefined) upstream.tracestate = tracestate;
      });
    },
  };
}

export default traceparent;
