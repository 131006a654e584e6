import { DEFAULT_MAX_JSON_DEPTH, exceedsJsonDepth, GatewayError, STAGES, tooDeep, uuidv7, type GatewayPlugin } from '../../sdk/index.js';

export const PLUGIN_NAME = 'trace';

/** Longest trace or span id accepted; longer ones are a 400 rather than a log-bloating header echo. */
const MAX_ID_LENGTH = 256;
const MAX_METADATA_BYTES = 8 * 1024;

/**
 * Trace ids and spans. `x-gateway-trace-id` is taken from the request or
 * generated (a UUIDv7), and echoed on every response (errors included). Span headers and
 * `x-gateway-metadata` (a JSON object) are kept on the context for the log.
 */
export function trace(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      api.hooks.request.tap({ name: PLUGIN_NAME, stage: STAGES.request.TRACE }, (ctx) => {
        const given = ctx.header('x-gateway-trace-id');
        // Generated ids are UUIDv7, ordered by time, so the log store's trace index grows at its end.
        const traceId = given === undefined || given === '' ? uuidv7() : given;
        ctx.traceId = traceId;
        ctx.responseHeaders['x-gateway-trace-id'] = traceId.length <= MAX_ID_LENGTH ? traceId : traceId.slice(0, MAX_ID_LENGTH);
        if (traceId.length > MAX_ID_LENGTH) {
          throw new GatewayError('invalid_header', `x-gateway-trace-id is longer than ${MAX_ID_LENGTH} characters.`, { param: 'x-gateway-trace-id' });
        }
        ctx.spanId = idHeader(ctx.header('x-gateway-span-id'), 'x-gateway-span-id');
        ctx.parentSpanId = idHeader(ctx.header('x-gateway-parent-span-id'), 'x-gateway-parent-span-id');
        ctx.spanName = idHeader(ctx.header('x-gateway-span-name'), 'x-gateway-span-name');
        const metadata = ctx.header('x-gateway-metadata');
        if (metadata !== undefined) ctx.metadata = parseMetadata(metadata, api.options.maxJsonDepth);
      });
    },
  };
}

function idHeader(value: string | undefined, name: string): string | null {
  if (value === undefined || value === '') return null;
  if (value.length > MAX_ID_LENGTH) throw new GatewayError('invalid_header', `${name} is longer than ${MAX_ID_LENGTH} characters.`, { param: name });
  return value;
}

/** `x-gateway-metadata` must be a JSON object; anything else is a 400 naming the header. */
export function parseMetadata(raw: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): Record<string, unknown> {
  if (raw.length > MAX_METADATA_BYTES) {
    throw new GatewayError('invalid_header', `x-gateway-metadata is larger than ${MAX_METADATA_BYTES} bytes.`, { param: 'x-gateway-metadata' });
  }
  // Metadata is matched by conditional routing and written to logs: refused here before anything walks it.
  if (exceedsJsonDepth(raw, maxDepth)) throw tooDeep('x-gateway-metadata', maxDepth, 'x-gateway-metadata');
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new GatewayError('invalid_header', 'x-gateway-metadata is not valid JSON; send a JSON object such as {"user":"u1"}.', { param: 'x-gateway-metadata' });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError('invalid_header', 'x-gateway-metadata must be a JSON object.', { param: 'x-gateway-metadata' });
  }
  return value as Record<string, unknown>;
}

export default trace;
