import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Attempt, RequestContext, RequestSummary } from '../../sdk/index.js';
import { headerChars } from './headers.js';

/** How request and response bodies are kept: whole (up to the scan limit), cut at `captureBytes`, or not at all. */
export type CaptureMode = 'full' | 'truncated' | 'off';

/**
 * What a request was, for analytics: `api`, traffic through the gateway's API (counted by the analytics
 * routes, the overview and the breakdowns), or `housekeeping`, the gateway serving itself to the people
 * and tools that run it (its dashboard and API reference, sign-in probes, health checks, metric scrapes,
 * reads of this very log), which is stored and listed like any request but left out of analytics unless asked for.
 */
export type EntryKind = 'api' | 'housekeeping';
export const ENTRY_KINDS: readonly EntryKind[] = ['api', 'housekeeping'];

/**
 * The routes whose requests are `housekeeping` unless the `log-store` option `housekeepingRoutes` says
 * otherwise, by route name (a name stays the same wherever a plugin mounts its route): the dashboard's
 * page, files and sign-in probe; the API reference (`/v1/openapi.json`, the `/docs` viewer and its
 * files); who-am-I and single sign-on (the sign-in page's probes, the login round trip, sign-out);
 * `/health` and `/ready`; `/metrics` and `/v1/metrics` (`metrics`, `metrics.2`); and the log and analytics routes (the dashboard's every page view reads them,
 * and counting the reads of the log in the log's own figures only measures who looks).
 */
export const DEFAULT_HOUSEKEEPING_ROUTES: readonly string[] = [
  'dashboard.redirect', 'dashboard.index', 'dashboard.asset', 'dashboard.session',
  'openapi.document', 'openapi.viewer', 'openapi.viewer.file',
  'auth.whoami', 'auth.sso.config', 'auth.sso.login', 'auth.sso.callback', 'auth.logout',
  'health', 'health.ready', 'metrics', 'metrics.2',
  'logs.list', 'logs.get', 'logs.groups', 'analytics.groups', 'analytics.timeseries',
];

/** One stored log entry; the column names of the `gateway_logs` table. Times are epoch ms. */
export interface LogEntry {
  id: string;
  created_at: number;
  ended_at: number;
  trace_id: string | null;
  span_id: string | null;
  parent_span_id: string | null;
  span_name: string | null;
  workspace_id: string | null;
  api_key_id: string | null;
  config_id: string | null;
  prompt_id: string | null;
  /** The version of the stored prompt the request used (`prompts` plugin), else null. */
  prompt_version: number | null;
  route: string | null;
  /** The API format the client spoke (`chat`, `responses`, `messages`), null for routes that are not a front door. */
  front_door: string | null;
  method: string;
  path: string;
  provider_requested: string | null;
  provider: string | null;
  model_requested: string | null;
  model: string | null;
  target_path: string | null;
  status: number;
  stream: boolean;
  internal: boolean;
  aborted: boolean;
  latency_ms: number | null;
  upstream_latency_ms: number | null;
  first_byte_ms: number | null;
  ttft_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  cached_tokens: number | null;
  reasoning_tokens: number | null;
  /**
   * Prompt tokens written to the provider's prompt cache (part of `prompt_tokens`, billed above input); 0 when usage
   * came without them, null without usage and in entries written before migration 14.
   */
  cache_write_tokens: number | null;
  /** Of `cache_write_tokens`, those written for an hour (Anthropic's `ephemeral_1h`); the rest are 5-minute writes. Null as `cache_write_tokens`. */
  cache_write_1h_tokens: number | null;
  tokens_estimated: boolean;
  cost: number | null;
  cost_status: string;
  pricing_multiplier: number;
  cache_status: string | null;
  retry_count: number;
  attempt_count: number;
  fallback_count: number;
  attempts: Attempt[];
  metadata: Record<string, unknown> | null;
  hook_results: unknown;
  /** The routing plugin's decisions: targets considered, skipped and why, chosen, affinity (docs/configuration.md#routing-that-knows-the-providers-state). */
  routing: unknown;
  /**
   * The price the cost was computed with (docs/cost.md): the list's version, the entry, the tier, each kind of
   * token's rate and amount, as JSON text; null for a cache hit. Serialised once, on the main thread: crossing to
   * the writer thread as text inside the packed group costs about 15 µs an entry less than as an object
   * (structured clone of its nested components), and the body store keeps the text as it is.
   */
  price: string | null;
  error_code: string | null;
  error_message: string | null;
  /** The rate limit or budget that refused the request (`limits` plugin), else null. */
  limit_policy_id: string | null;
  /** The JSON-RPC method of an MCP or A2A call (`tools/call`, `message/send`), else null. */
  rpc_method: string | null;
  /** The tool an MCP `tools/call` named, else null. */
  tool_name: string | null;
  /**
   * The request's headers, names in lower case, credentials redacted (headers.ts); null for entries
   * written before migration 7. Set by `finishEntry` from `received_headers`.
   */
  request_headers: Record<string, string> | null;
  request_body: string | null;
  request_body_truncated: boolean;
  response_body: string | null;
  response_body_truncated: boolean;
  /**
   * Not a column: `response_body` holds a streamed answer as sent (SSE), whose text `finishEntry`
   * assembles where the entry is written; false once it has (or for any other answer).
   */
  response_stream: boolean;
  /**
   * Not a column: the request's headers as received (the request's own object, not a copy), which
   * `finishEntry` filters and redacts into `request_headers` where the entry is written; null once it has.
   */
  received_headers: IncomingHttpHeaders | null;
  /**
   * Not a column: whether the gateway took an inline `x-gateway-config` as this request's config (it
   * resolved a target, and did not refuse the header). Only such a config is stored (credential fields
   * redacted): one refused or never read may carry a credential in any field.
   */
  config_accepted: boolean;
  /** `api` or `housekeeping` (see {@link EntryKind}); `api` for entries written before migration 8, but those of the default routes. */
  kind: EntryKind;
}

/** Column order of an insert; every LogEntry field. */
export const COLUMNS = [
  'id', 'created_at', 'ended_at', 'trace_id', 'span_id', 'parent_span_id', 'span_name', 'workspace_id', 'api_key_id', 'config_id',
  'prompt_id', 'prompt_version', 'route', 'front_door', 'method', 'path', 'provider_requested', 'provider', 'model_requested', 'model', 'target_path', 'status',
  'stream', 'internal', 'aborted', 'latency_ms', 'upstream_latency_ms', 'first_byte_ms', 'ttft_ms', 'prompt_tokens',
  'completion_tokens', 'total_tokens', 'cached_tokens', 'reasoning_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'tokens_estimated',
  'cost', 'cost_status', 'pricing_multiplier', 'cache_status', 'retry_count', 'attempt_count', 'fallback_count', 'attempts', 'metadata', 'hook_results', 'routing', 'price',
  'error_code', 'error_message', 'limit_policy_id', 'rpc_method', 'tool_name', 'request_headers', 'request_body', 'request_body_truncated', 'response_body', 'response_body_truncated',
  'kind',
] as const satisfies readonly (keyof LogEntry)[];

/** Columns holding JSON text. */
export const JSON_COLUMNS = new Set<string>(['attempts', 'metadata', 'hook_results', 'routing', 'price', 'request_headers']);
/** Columns holding 0/1. */
export const BOOLEAN_COLUMNS = new Set<string>(['stream', 'internal', 'aborted', 'tokens_estimated', 'request_body_truncated', 'response_body_truncated']);

/** Random per process: ids from two gateway instances never collide. */
const INSTANCE = randomBytes(5).toString('hex');
const COUNTER_SPACE = 36 ** 6;
let counter = Math.floor(Math.random() * COUNTER_SPACE);
/** The time part of the last id made, and its millisecond. */
let prefixMs = -1;
let prefix = '';

/**
 * A unique id that sorts by creation time: `log_` + 9 base-36 digits of
 * epoch ms + 6 base-36 digits of a per-process counter + 10 random hex
 * digits drawn once per process (so two instances never collide).
 */
export function newLogId(ms: number): string {
  counter = (counter + 1) % COUNTER_SPACE;
  // Requests finishing in the same millisecond (most, under load) share the time part, formatted once.
  if (ms !== prefixMs) {
    prefixMs = ms;
    prefix = `log_${ms.toString(36).padStart(9, '0')}`;
  }
  return `${prefix}${counter.toString(36).padStart(6, '0')}${INSTANCE}`;
}

export interface EntryOptions {
  capture: CaptureMode;
  captureBytes: number;
  /** Longest body kept in `full` mode. */
  scanLimit: number;
  /** Saved config id when the server default config is a saved one (the request sent no header). */
  defaultConfigId: string | null;
  /** Names of the routes whose requests are `housekeeping`. */
  housekeeping: ReadonlySet<string>;
  /** The workspace a request acted in (an organisation-level key's too), or null. */
  workspaceOf(ctx: RequestContext): string | null;
}

const round3 = (ms: number | null): number | null => (ms === null ? null : Math.round(ms * 1000) / 1000);

/**
 * The entry of a finished request, as the log tap makes it on the event loop: cheap work only.
 * Bodies are the first `limit + REDACT_SLACK` characters, not yet redacted or cut (a stream's
 * answer is its SSE text, not yet assembled), hook results are as the hooks left them, and the
 * headers are the request's own object (a reference: no copy, no JSON work here). `finishEntry`
 * (finish.ts) does that work where the entry is written, on the writer thread when there is one.
 */
export function buildEntry(ctx: RequestContext, s: RequestSummary, options: EntryOptions): LogEntry {
  const created = Math.round(s.startedAt);
  const usage = s.usage;
  // Routes that carry secrets in their bodies (the admin API: new keys, provider credentials) never have them stored.
  const sensitive = ctx.route?.sensitive === true;
  const request = sensitive ? { text: null, cut: false } : captureRequest(ctx, options);
  // A stream whose text was not assembled yet travels as sent; the writer assembles and cuts it.
  const stream = !sensitive && options.capture !== 'off' && s.responseStream !== null;
  const response = sensitive ? { text: null, cut: false } : stream ? { text: s.responseStream, cut: s.responseCut } : headOf(s.responseText, s.responseCut, options);
  return {
    id: newLogId(created),
    created_at: created,
    ended_at: Math.round(s.endedAt),
    trace_id: ctx.traceId,
    span_id: ctx.spanId,
    parent_span_id: ctx.parentSpanId,
    span_name: ctx.spanName,
    workspace_id: options.workspaceOf(ctx),
    api_key_id: ctx.auth?.keyId ?? null,
    config_id: configId(ctx, options.defaultConfigId),
    prompt_id: promptId(ctx),
    prompt_version: typeof ctx.logFields.prompt_version === 'number' ? ctx.logFields.prompt_version : null,
    route: ctx.route?.name ?? null,
    front_door: ctx.route?.frontDoor ?? null,
    method: ctx.method,
    path: ctx.path,
    provider_requested: s.providerRequested,
    provider: s.provider,
    model_requested: s.modelRequested,
    model: s.modelAnswered ?? s.modelRequested,
    target_path: ctx.targetPath,
    status: ctx.status,
    stream: ctx.stream || s.sse,
    internal: ctx.internal,
    aborted: ctx.aborted,
    latency_ms: round3(ctx.latencyMs),
    upstream_latency_ms: round3(ctx.upstreamLatencyMs),
    first_byte_ms: round3(ctx.firstByteMs),
    ttft_ms: round3(s.ttftMs),
    prompt_tokens: usage?.prompt_tokens ?? null,
    completion_tokens: usage?.completion_tokens ?? null,
    total_tokens: usage?.total_tokens ?? null,
    cached_tokens: usage === null ? null : usage.cached_tokens ?? 0,
    reasoning_tokens: usage === null ? null : usage.reasoning_tokens ?? 0,
    cache_write_tokens: usage === null ? null : usage.cache_write_tokens ?? 0,
    cache_write_1h_tokens: usage === null ? null : usage.cache_write_1h_tokens ?? 0,
    tokens_estimated: s.tokensEstimated,
    cost: s.cost,
    cost_status: s.costStatus,
    pricing_multiplier: s.multiplier,
    cache_status: ctx.cacheStatus,
    retry_count: s.retries,
    attempt_count: ctx.attempts.length,
    fallback_count: s.fallbacks,
    // Times to the microsecond: more digits say nothing, and a double's full digits are slow to write as JSON.
    attempts: ctx.attempts.map((a) => ({ ...a, startMs: Math.round(a.startMs * 1000) / 1000, latencyMs: Math.round(a.latencyMs * 1000) / 1000 })),
    metadata: ctx.metadata,
    hook_results: ctx.logFields.hook_results ?? null,
    routing: ctx.logFields.routing ?? null,
    // Without usage there is nothing to price (an error, a refusal): no price kept, as for a cache hit.
    price: s.price === null || s.price.status === 'no_usage' ? null : JSON.stringify(s.price),
    error_code: ctx.error?.code ?? null,
    error_message: ctx.error?.message ?? null,
    limit_policy_id: typeof ctx.logFields.limit_policy_id === 'string' ? ctx.logFields.limit_policy_id : null,
    rpc_method: typeof ctx.logFields.rpc_method === 'string' ? ctx.logFields.rpc_method.slice(0, 256) : null,
    tool_name: typeof ctx.logFields.tool_name === 'string' ? ctx.logFields.tool_name.slice(0, 256) : null,
    request_headers: null,
    request_body: request.text,
    request_body_truncated: request.cut,
    response_body: response.text,
    response_body_truncated: response.cut,
    response_stream: stream,
    received_headers: ctx.headers,
    // A target was resolved, so an inline config the route reads passed the config schema. (A route that names its own
    // target, such as the prompt completions route, never reads the header: its config is stored redacted by field names.)
    config_accepted: ctx.target !== null && ctx.error?.param !== 'x-gateway-config',
    // By the route that matched, even when it refused (a sign-in probe's 401 is housekeeping too); no route: the API's.
    kind: ctx.route !== null && options.housekeeping.has(ctx.route.name) ? 'housekeeping' : 'api',
  };
}

/** `x-gateway-config` when it names a saved config (not inline JSON); else the default config's id when it is a saved one. */
function configId(ctx: RequestContext, defaultConfigId: string | null): string | null {
  const header = ctx.header('x-gateway-config')?.trim();
  if (header === undefined || header === '') return ctx.route?.kind === 'provider' ? defaultConfigId : null;
  return header.startsWith('{') ? null : header.slice(0, 256);
}

/**
 * The stored prompt a request used: its id as the `prompts` plugin resolved it (a slug or a version
 * suffix in the request becomes the prompt's id); else the `promptId` of a prompts route (version suffix
 * dropped), or the target's `prompt_id`.
 */
function promptId(ctx: RequestContext): string | null {
  const resolved = ctx.logFields.prompt_id;
  if (typeof resolved === 'string') return resolved;
  const fromPath = ctx.params?.promptId;
  if (typeof fromPath === 'string' && fromPath !== '') {
    const at = fromPath.indexOf('@');
    return at === -1 ? fromPath : fromPath.slice(0, at);
  }
  const fromTarget = ctx.target?.prompt_id;
  return typeof fromTarget === 'string' && fromTarget !== '' ? fromTarget : null;
}

const TEXT_TYPES = /^(?:text\/|application\/(?:[a-z0-9.+-]*\+)?(?:json|xml|x-www-form-urlencoded|x-ndjson))/;

/** Slack kept past the limit before redacting, so a credential straddling the cut is still recognised. */
export const REDACT_SLACK = 4096;

/** Characters of a body kept for the writer: the capture limit plus the redaction slack. */
export function headLength(options: Pick<EntryOptions, 'capture' | 'captureBytes' | 'scanLimit'>): number {
  return options.capture === 'full' ? options.scanLimit + REDACT_SLACK : options.capture === 'truncated' ? options.captureBytes + REDACT_SLACK : 0;
}

/** The request body's head: only that many bytes are decoded, however large the body. */
function captureRequest(ctx: RequestContext, options: EntryOptions): { text: string | null; cut: boolean } {
  if (options.capture === 'off' || ctx.rawBody === null || ctx.rawBody.length === 0) return { text: null, cut: false };
  const type = (ctx.header('content-type') ?? '').toLowerCase();
  if (ctx.body === null && type !== '' && !TEXT_TYPES.test(type)) return { text: `<${type} body, ${ctx.rawBody.length} bytes>`, cut: false };
  const max = headLength(options);
  const raw = ctx.rawBody;
  return raw.length > max ? { text: raw.subarray(0, max).toString('utf8'), cut: true } : { text: raw.toString('utf8'), cut: false };
}

function headOf(text: string | null, alreadyCut: boolean, options: EntryOptions): { text: string | null; cut: boolean } {
  if (options.capture === 'off' || text === null) return { text: null, cut: false };
  const max = headLength(options);
  return text.length > max ? { text: text.slice(0, max), cut: true } : { text, cut: alreadyCut };
}

/** Approximate bytes an entry holds in memory, for the queue's byte bound (the headers it holds included). */
export function entrySize(e: LogEntry): number {
  const headers = e.received_headers === null ? 0 : headerChars(e.received_headers);
  return 1024 + (e.request_body?.length ?? 0) * 2 + (e.response_body?.length ?? 0) * 2 + (e.error_message?.length ?? 0) * 2 + headers * 2;
}
