/**
 * OpenTelemetry semantic conventions the plugin writes: HTTP server spans and
 * the GenAI conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
 * Stable names come from the conventions package; the GenAI names are still
 * "development" there, and the package asks users to copy those rather than
 * import its incubating entry point (which may change in a minor release).
 * Only loaded when export is on (record.ts and telemetry.ts import it).
 */
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_URL_PATH } from '@opentelemetry/semantic-conventions';

export const ATTR = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  tokenType: 'gen_ai.token.type',
  errorType: ATTR_ERROR_TYPE,
  httpMethod: ATTR_HTTP_REQUEST_METHOD,
  httpStatus: ATTR_HTTP_RESPONSE_STATUS_CODE,
  httpRoute: ATTR_HTTP_ROUTE,
  urlPath: ATTR_URL_PATH,
} as const;

/** The gateway's own attributes, under `gateway.`. */
export const GATEWAY_ATTR = {
  traceId: 'gateway.trace_id',
  route: 'gateway.route',
  // The GenAI conventions have no attribute for a streamed answer yet, so it is the gateway's own.
  stream: 'gateway.stream',
  providerRequested: 'gateway.provider.requested',
  targetPath: 'gateway.target_path',
  attempts: 'gateway.attempt_count',
  retries: 'gateway.retry_count',
  fallbacks: 'gateway.fallback_count',
  cacheStatus: 'gateway.cache.status',
  cost: 'gateway.cost_usd',
  cachedTokens: 'gateway.usage.cached_tokens',
  reasoningTokens: 'gateway.usage.reasoning_tokens',
  tokensEstimated: 'gateway.usage.estimated',
  aborted: 'gateway.aborted',
  /** Why the gateway ended a stream early (`guardrail`, `usage_limit`, `idle_timeout`), what cut it, and the characters sent before. */
  /** The routing plugin's decisions: the targets chosen, those skipped (`path:reason`), and affinity (`hit`, `miss`). */
  routingChosen: 'gateway.routing.chosen',
  routingSkipped: 'gateway.routing.skipped',
  routingAffinity: 'gateway.routing.affinity',
  streamCut: 'gateway.stream.cut.reason',
  streamCutBy: 'gateway.stream.cut.by',
  streamCutChars: 'gateway.stream.cut.chars_sent',
  /** Continuations spliced into a stream that broke (on_stream_failure: continue), and each break: `reason@chars:outcome`. */
  streamContinuations: 'gateway.stream.continuations',
  streamBreaks: 'gateway.stream.breaks',
  workspace: 'gateway.workspace_id',
  apiKey: 'gateway.api_key_id',
  target: 'gateway.attempt.target',
} as const;

/** Metric instruments of the GenAI conventions (client side: the gateway calls the providers for its clients). */
export const METRIC = {
  tokenUsage: 'gen_ai.client.token.usage',
  duration: 'gen_ai.client.operation.duration',
  timeToFirstChunk: 'gen_ai.client.operation.time_to_first_chunk',
} as const;

/** Bucket bounds the conventions advise: token counts, and durations in seconds. */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** The gateway's route names for model calls, as `gen_ai.operation.name` values (`rerank` has no well-known value: the conventions allow a custom one). */
const OPERATIONS: Readonly<Record<string, string>> = {
  'chat.completions': 'chat',
  // The Responses and Messages front doors are chat conversations in another format.
  responses: 'chat',
  messages: 'chat',
  completions: 'text_completion',
  embeddings: 'embeddings',
  rerank: 'rerank',
};

/** `gen_ai.operation.name` of a route, or null for routes that call no model (admin, logs, the generic proxy). */
export function operationOf(route: string | null): string | null {
  return route === null ? null : (OPERATIONS[route] ?? null);
}

/** Provider ids of this gateway and the conventions' well-known `gen_ai.provider.name` values; others are used as they are. */
const PROVIDERS: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  bedrock: 'aws.bedrock',
  'azure-openai': 'azure.ai.openai',
  'azure-ai': 'azure.ai.inference',
  google: 'gcp.gemini',
  'vertex-ai': 'gcp.vertex_ai',
  cohere: 'cohere',
  'mistral-ai': 'mistral_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  'perplexity-ai': 'perplexity',
  'x-ai': 'x_ai',
};

export function providerName(provider: string): string {
  return PROVIDERS[provider] ?? provider;
}
