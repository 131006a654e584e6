/**
 * The core's public surface. Plugins reach it through the SDK (`sdk/index.ts`,
 * published as `switchyard-gateway/sdk`), which re-exports all of this; the server and
 * the tests may import it directly.
 *
 * @packageDocumentation
 */
export { createGateway, DEFAULT_OPTIONS, type CreateGatewayOptions, type Gateway } from './gateway.js';
export { RequestContext, stateKey, type StateKey, type UpgradeRequest } from './context.js';
export {
  GatewayError,
  CORE_ERROR_CODES,
  defineErrors,
  resolveErrorCode,
  toGatewayError,
  type ErrorFactory,
  type GatewayErrorOptions,
  type CoreErrorCode,
  type ErrorCode,
  type ErrorCodeSpec,
  type ErrorEnvelope,
} from './errors.js';
export { CORE_TARGET_FIELDS, fieldSchema, TargetFields, type DeclaredField, type TargetField } from './fields.js';
export { createHooks, type GatewayHooks } from './hooks.js';
export { authenticatorsOf, type RouteFilter, type RouteTapOptions } from './lifecycle/route-taps.js';
export { STAGES, type StageGroup } from './stages.js';
export type { GatewayPlugin, KeptState, PluginAPI, Registries } from './plugin.js';
export { Registry } from './registry.js';
export { RouteTable, routeApi, type RouteEntry, type RouteMatch } from './router.js';
export { ROUTING_HEADERS } from './routing-headers.js';
export { serviceToken, TOKENS, type ServiceToken } from './tokens.js';
export { GATEWAY_API_VERSION } from './version.js';
export { childPath } from './paths.js';
export { hasScope, requireScope } from './auth.js';
export { abortable } from './abort.js';
export { invalidBody, issuePath, parseOptions, plainObject } from './validate.js';
export { createLogger, CORE_REDACT_PATHS, flushLogger, redactPaths, type Logger, type LoggerOptions } from './logger.js';
export { isoTime } from './iso-time.js';
export { HOP_BY_HOP, NEVER_FORWARDED, bearerToken, forwardableHeaders, isForwardable } from './http/headers.js';
export { discardResponse, jsonResponse, errorResponse, readResponseBody } from './http/write-response.js';
export { parseJsonObject, tooDeep } from './http/read-body.js';
export { DEFAULT_MAX_JSON_DEPTH, exceedsJsonDepth, exceedsValueDepth } from './json-limits.js';
export { baseURL, effectiveBody, forwardHeaders, passThrough, requestBody } from './upstream/transport.js';
export { UpstreamClient, upstreamBodyError, type UpstreamClientOptions } from './upstream/client.js';
export { isBodySource, mapChunks, MAX_UPSTREAM_BODY_BYTES, sourceOf, toSource, UpstreamBody, type BodySource, type ChunkMap, type ChunkSink, type Flow } from './upstream/body.js';
export { upstreamUrlProblem, withoutUserInfo } from './upstream/urls.js';
export { allowEntryProblem, HostPolicy, isRefusedAddress } from './upstream/host-policy.js';
export type * from './types.js';
export type { DetachedRequest, DetachedResponse, InternalRequest, InternalResponse } from './pipeline.js';
