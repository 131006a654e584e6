/** The public plugin API. Plugins import from here and nowhere else in `core/`. */
export { createGateway, DEFAULT_OPTIONS, type CreateGatewayOptions, type Gateway } from './gateway.js';
export { RequestContext } from './context.js';
export { GatewayError, ERROR_CODES, toGatewayError, type ErrorCode, type ErrorEnvelope } from './errors.js';
export { createHooks, STAGE, type GatewayHooks } from './hooks.js';
export type { GatewayPlugin, PluginAPI, Registries } from './plugin.js';
export { Registry } from './registry.js';
export { RouteTable, type RouteMatch } from './router.js';
export { TOKENS } from './tokens.js';
export { childPath } from './paths.js';
export { abortable } from './abort.js';
export { invalidBody, issuePath, parseOptions, plainObject } from './validate.js';
export { createLogger, flushLogger, REDACT_PATHS, type Logger, type LoggerOptions } from './logger.js';
export { HOP_BY_HOP, bearerToken, forwardableHeaders } from './http/headers.js';
export { discardResponse, jsonResponse, errorResponse, readResponseBody } from './http/write-response.js';
export { baseURL, effectiveBody, passThrough, requestBody } from './upstream/transport.js';
export { UpstreamClient } from './upstream/client.js';
export type * from './types.js';
export type { InternalRequest, InternalResponse } from './pipeline.js';
