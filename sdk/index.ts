/**
 * The SDK: everything a plugin needs, from one entry point (`switchyard-gateway/sdk`).
 *
 * - the plugin API and its types (re-exported from the core), and valibot as `v`;
 * - the typed service tokens bundled plugins offer one another;
 * - the shared wire helpers: OpenAI-format chunks, answers and usage, SSE
 *   parsing, the shaped routes, rerank, embeddings, OAuth token requests,
 *   and the Anthropic and Gemini formats (as the `anthropic` and `gemini`
 *   namespaces);
 * - what several plugins build on: the guardrail check contract, the SQL
 *   store contract, sealing secrets at rest, the price list and per-request
 *   accounting, the shape of stored prompts.
 *
 * Bundled plugins import this (and files of their own package), never
 * another plugin's files; a third-party plugin imports `switchyard-gateway/sdk`.
 *
 * @module switchyard-gateway/sdk
 */
export * from '../core/index.js';
export * from './tokens.js';
/**
 * valibot, the schema library the gateway validates with: options, target
 * fields and check parameters built with it read like the gateway's own, and
 * a plugin package needs no copy of its own.
 */
export * as v from 'valibot';

export { SSEParser, type SSEEvent } from './sse.js';
export { NDJSON_MAX_LINE_BYTES, NDJSONParser, type NDJSONLine } from './ndjson.js';
export { wholeBodyObserver } from './whole-body.js';
export { CACHE_WRITE_1H, ChatChunkWriter, completionId, openAIUsage, type FinishReason, type MoreCounts, type OpenAIUsage } from './openai/chunks.js';
export { base64Floats } from './openai/embeddings.js';
export { openAIFormatResponse } from './openai/response.js';
export { addShapedRoutes, INFERENCE_TAG, OPENAI_ROUTES, type OpenAIRouteName } from './openai/routes.js';
export { ChatCompletionBodySchema, CompletionBodySchema, EmbeddingBodySchema } from './openai/schema.js';
export { errorAnswer, jsonAnswer, openAIErrorType, readJson, readText, streamAnswer, toGatewayUsage, wantsUsage, type ErrorFields, type StreamTranslator } from './openai/translate.js';
export { addUsage, extractUsage, jsonUsageObserver, sseUsageObserver, toUsage } from './openai/usage.js';
export { chatTurns, forEachChatMessage, toolArguments, type ChatTurn, type ChatTurns } from './chat-turns.js';
export * as anthropic from './anthropic/index.js';
export * as gemini from './gemini/index.js';
export * as responses from './responses/index.js';
export { hasEventStreamType, headersWithout, isEventStream, readAnswerJson, translateStream, type DoorStreamTranslator } from './door-stream.js';
export * from './stream-recovery/index.js';
export { redisConnection, redisConnectionOf, waitForReplicas, type RedisConnection } from './redis.js';
export { doorStreamOf, serializeEvent, STREAM_CUT, StreamControl, streamControl, type DoorStream, type StreamCut, type StreamView, type StreamWatcher } from './stream-control/index.js';

export { addRerankRoute, RERANK_ROUTE } from './rerank/route.js';
export { RerankBodySchema, type RerankBody } from './rerank/schema.js';
export {
  documentTexts,
  errorMessage,
  extraParameters,
  genericErrorAnswer,
  rankedIndexes,
  readErrorJson,
  rerankAnswer,
  rerankBody,
  rerankResponse,
  upstreamModel,
  type RankedIndex,
  type RerankAnswerOptions,
} from './rerank/shape.js';

export { postTokenForm, type Send } from './oauth.js';
export { nativeError, nativeFormat, readNative, resolveLeaf, selectedTarget, sendNative, type NativeCall, type NativeTarget, type ResourceKind } from './native.js';
export {
  gatewayErrorToJsonRpc,
  JSONRPC,
  JsonRpcError,
  jsonRpcErrorBody,
  JsonRpcErrorBodySchema,
  jsonRpcErrorResponse,
  JsonRpcMessageSchema,
  JSON_RPC_ERRORS,
  jsonRpcRouteError,
  readJsonRpc,
  setJsonRpcId,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcKind,
  type JsonRpcMessage,
} from './jsonrpc.js';
export { contentText, defineCheck, requestText, responseText, type CheckInput, type CheckResult, type GuardrailCheck, type StreamJudgement } from './guardrails.js';
export { migrate, numberPlaceholders, splitStatements, sqlStore, type Migration, type SqlClient, type SqlStore } from './sql.js';
export { sqliteClient } from './sqlite.js';
export { randomHex, uuidv7, w3cTraceId } from './ids.js';
export { etagMatches, staticAnswer, staticFile, type StaticFile } from './static-files.js';
export { gatewayPackageVersion } from './package-version.js';
export { createSecretBox, loadEncryptionKey, maskSecret, parseEncryptionKey, type LoadedKey, type SecretBox } from './secret-box.js';
export { maskedJson, openJson, sealJson, type SealedJson } from './sealed-json.js';
export { compilePattern, MAX_MATCH_COST, MAX_PATTERN_LENGTH, MAX_PATTERN_SIZE, PatternError, type Pattern } from './pattern.js';
export {
  bundledContextWindowData,
  bundledContextWindows,
  bundledPricing,
  bundledPricingData,
  componentsOf,
  ContextWindows,
  costOf,
  entriesOf,
  PRICE_COMPONENTS,
  pricingOf,
  PricingTable,
  readPricingData,
  type ContextWindowData,
  type CostResult,
  type CostStatus,
  type DatedPrice,
  type MatchRule,
  type ModelEntry,
  type ModelPrice,
  type PriceBreakdown,
  type PriceComponent,
  type PriceComponentName,
  type PriceOptions,
  type PricingData,
  type Rate,
} from './pricing/index.js';
export { assembleSSE, type AssembledStream } from './observe/assemble.js';
export {
  MAX_PROMPT_VERSION,
  parsePromptRef,
  templateTexts,
  type PartialRelease,
  type PromptLookup,
  type PromptRef,
  type PromptRelease,
  type PromptSelection,
  type PromptSelector,
  type PromptVariable,
  type TemplateCheck,
  type TemplateText,
} from './prompts.js';
export {
  CONDITION_KEYS,
  DAY_MS,
  ENDPOINT_TYPE_MATCHES,
  ENDPOINT_TYPES,
  endpointTypesMatched,
  firstReset,
  formatUsd,
  GROUP_BY_KEYS,
  HOUR_MS,
  isConditionKey,
  isGroupByKey,
  LimitConditionsSchema,
  LimitGroupBySchema,
  MINUTE_MS,
  PERIODIC_RESETS,
  POLICY_STATUSES,
  RATE_LIMIT_TYPES,
  RATE_LIMIT_UNITS,
  RATE_UNIT_MS,
  RATE_UNIT_WORDS,
  rateWindow,
  SESSION_LIMITS,
  USAGE_LIMIT_TYPES,
  usagePeriod,
  utcMidnight,
  WEEK_MS,
  type LimitCondition,
  type LimitGroupBy,
  type LimitPolicy,
  type LimitPolicySet,
  type PeriodicReset,
  type RateLimitPolicy,
  type RateLimitType,
  type RateLimitUnit,
  type ResetRule,
  type SessionLimitsService,
  type UsageLimitPolicy,
  type UsageLimitType,
} from './limits.js';
export {
  captureResponses,
  type CaptureLimits,
  capturedBytes,
  capturedResponse,
  DEFAULT_SCAN_LIMIT,
  HEAD_BYTES,
  modelOfJson,
  pricingMultiplier,
  requestedProvider,
  type CapturedResponse,
} from './observe/capture.js';
export {
  addImplicitPromptTokens,
  CHARS_PER_TOKEN,
  estimatePromptTokens,
  estimateRequestPromptTokens,
  requestSummary,
  USAGE_SEGMENTS,
  type UsageSegment,
  type RequestCostStatus,
  type RequestSummary,
  type SummaryOptions,
} from './observe/summary.js';
export { isObject, type JsonObject } from './json-object.js';
export { DEADLINE, DEADLINE_ERROR, deadlineError, deadlineLeft, pickWeighted, ROUTING, TARGET_LIMITS, weightOf, type Deadline, type RoutePlan, type RoutingService, type TargetBlock, type TargetLimitsService } from './routing.js';
export { retryAfterMs } from './retry-after.js';
export { credentialDigest, targetIdentity } from './target-identity.js';
export { knownTenant, NO_TENANT, TENANCY, tenantOf, type TenancyService } from './tenancy.js';
export { asksStreamUsage, streamUsageBody, streamUsageResponse, usageEventFilter, withStreamUsage } from './openai/stream-usage.js';
export { MEDIA_ROUTE_NAMES, MEDIA_ROUTES, openAIMediaRoute, parseImageSize, withMediaUsage, withTailUsage, type MediaRouteName } from './media.js';
export { checkWebSocketHandshake } from './websocket.js';
