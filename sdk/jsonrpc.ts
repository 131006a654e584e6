import * as v from 'valibot';
import { exceedsJsonDepth, GatewayError, jsonResponse, type ErrorFormat, type GatewayResponse, type RequestContext, stateKey } from '../core/index.js';

/**
 * JSON-RPC 2.0 as the gateway's MCP and A2A endpoints speak it: reading one
 * message from a request body, and answering errors in JSON-RPC's shape
 * (`{"jsonrpc":"2.0","id":…,"error":{"code","message","data"}}`) instead of
 * the gateway's envelope, with the envelope's fields kept in `data`.
 */

/** The error codes JSON-RPC 2.0 defines, and the one it leaves to implementations for server errors. */
export const JSONRPC = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** Implementation-defined server error: the gateway refused (auth, scope, unknown resource, guardrail). */
  SERVER_ERROR: -32000,
});

/** A JSON-RPC message id: a string, a number, or null (for an error about a message whose id could not be read). */
export type JsonRpcId = string | number | null;

/** One JSON-RPC message, as the client sent it. */
export interface JsonRpcMessage {
  /** The protocol version; always `2.0`. */
  jsonrpc: '2.0';
  /** Ties a response to its request; absent on a notification. */
  id?: JsonRpcId;
  /** The method called, on a request or a notification. */
  method?: string;
  /** The call's parameters, on a request or a notification. */
  params?: unknown;
  /** The result, on a successful response. */
  result?: unknown;
  /** The error, on a failed response. */
  error?: unknown;
  [field: string]: unknown;
}

/** What a message is: a request (method and id), a notification (method, no id) or a response (result or error, and an id). */
export type JsonRpcKind = 'request' | 'notification' | 'response';

const JsonRpcIdSchema = v.nullable(v.union([v.string(), v.number()]));

/**
 * One JSON-RPC 2.0 message, for API references (`RouteDoc.body`). Requests
 * are read with {@link readJsonRpc}, which checks the same shape and names
 * what is wrong in JSON-RPC's own error codes.
 */
export const JsonRpcMessageSchema = v.looseObject({
  jsonrpc: v.literal('2.0'),
  id: v.optional(JsonRpcIdSchema),
  method: v.optional(v.pipe(v.string(), v.minLength(1))),
  params: v.optional(v.unknown()),
  result: v.optional(v.unknown()),
  error: v.optional(v.unknown()),
});

/** A JSON-RPC error answer, for API references (`RouteDoc.error` of a route answering errors with {@link JSON_RPC_ERRORS}). */
export const JsonRpcErrorBodySchema = v.object({
  jsonrpc: v.literal('2.0'),
  id: JsonRpcIdSchema,
  error: v.object({ code: v.number(), message: v.string(), data: v.optional(v.unknown()) }),
});

/** A JSON-RPC error object. */
export interface JsonRpcErrorObject {
  /** The error code: JSON-RPC's own (see {@link JSONRPC}) or an application's. */
  code: number;
  /** A short description of the error. */
  message: string;
  /** Details about the error, in any shape. */
  data?: unknown;
}

/** A refusal to answer in JSON-RPC: its code, the HTTP status it goes out with, and optional data. */
export class JsonRpcError extends Error {
  /**
   * Builds a refusal (as {@link readJsonRpc} throws them): answer it with {@link jsonRpcErrorResponse}.
   *
   * @param code - The JSON-RPC error code (see {@link JSONRPC}).
   * @param message - The error object's `message`.
   * @param status - The HTTP status the answer goes out with (default 200, as JSON-RPC over HTTP answers).
   * @param data - The error object's `data`, when there is any.
   */
  constructor(
    readonly code: number,
    message: string,
    readonly status = 200,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

/**
 * Reads one JSON-RPC message from a request body. A body that is not JSON is a
 * parse error, a batch (an array) or anything that is not a JSON-RPC 2.0
 * message an invalid request, both with HTTP 400.
 */
export function readJsonRpc(raw: Buffer | null, maxDepth: number): { message: JsonRpcMessage; kind: JsonRpcKind } {
  let value: unknown;
  if (raw !== null && exceedsJsonDepth(raw, maxDepth)) throw new JsonRpcError(JSONRPC.INVALID_REQUEST, `Invalid request: the message nests deeper than ${maxDepth} levels.`, 400);
  try {
    value = JSON.parse(raw === null ? '' : raw.toString('utf8'));
  } catch {
    throw new JsonRpcError(JSONRPC.PARSE_ERROR, 'Parse error: the body is not JSON.', 400);
  }
  if (Array.isArray(value)) throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: batches are not supported; send one message per request.', 400);
  if (typeof value !== 'object' || value === null) throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: the body must be a JSON-RPC 2.0 message object.', 400);
  const message = value as JsonRpcMessage;
  if (message.jsonrpc !== '2.0') throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".', 400);
  const id = message.id;
  const hasId = id !== undefined;
  if (hasId && id !== null && typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id))) {
    throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: "id" must be a string, a number or null.', 400);
  }
  if (typeof message.method === 'string') {
    if (message.method === '') throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: "method" must not be empty.', 400);
    if (message.params !== undefined && (typeof message.params !== 'object' || message.params === null)) {
      throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: "params" must be an object or an array.', 400);
    }
    return { message, kind: hasId ? 'request' : 'notification' };
  }
  if (message.method !== undefined) throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: "method" must be a string.', 400);
  if (hasId && ('result' in message || 'error' in message)) return { message, kind: 'response' };
  throw new JsonRpcError(JSONRPC.INVALID_REQUEST, 'Invalid request: a message needs a "method" (request or notification), or an "id" with "result" or "error" (response).', 400);
}

/** A JSON-RPC error message. */
export function jsonRpcErrorBody(id: JsonRpcId, error: JsonRpcErrorObject): { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcErrorObject } {
  return { jsonrpc: '2.0', id, error };
}

/** A JSON-RPC error as an HTTP response (JSON). */
export function jsonRpcErrorResponse(status: number, id: JsonRpcId, error: JsonRpcErrorObject, headers: Record<string, string> = {}): GatewayResponse {
  return jsonResponse(status, jsonRpcErrorBody(id, error), headers);
}

/**
 * A gateway error as a JSON-RPC error object: code -32000 (the gateway
 * refused: 401, 403, 404, 413, …), -32603 for the gateway's own 5xx, -32700
 * for a body that is not JSON; `data` carries the envelope's `status`,
 * `type`, `code` and `param`.
 */
export function gatewayErrorToJsonRpc(err: GatewayError): JsonRpcErrorObject {
  const code = err.code === 'invalid_json' ? JSONRPC.PARSE_ERROR : err.status >= 500 ? JSONRPC.INTERNAL_ERROR : JSONRPC.SERVER_ERROR;
  return { code, message: err.message, data: { status: err.status, type: err.type, code: err.code, param: err.param } };
}

/** Where a JSON-RPC route keeps the id of the message being answered, so its errors name it. */
const ID_STATE = stateKey<JsonRpcId>('jsonrpc:id');

/** Records the id of the message a request carries (errors answered later name it). */
export function setJsonRpcId(ctx: RequestContext, id: JsonRpcId | undefined): void {
  if (id !== undefined) ctx.set(ID_STATE, id);
}

/**
 * The error answer of a JSON-RPC endpoint: any error becomes a
 * JSON-RPC error with the HTTP status the gateway would have answered (a
 * {@link JsonRpcError} keeps its own), naming the message's id once known.
 */
export function jsonRpcRouteError(err: GatewayError, ctx: RequestContext): GatewayResponse {
  const id = ctx.get(ID_STATE) ?? null;
  return jsonRpcErrorResponse(err.status, id, gatewayErrorToJsonRpc(err), err.headers ? { ...err.headers } : {});
}

/** The `errorFormat` of a JSON-RPC route (MCP, A2A): errors the gateway raises answer in JSON-RPC's shape. */
export const JSON_RPC_ERRORS: ErrorFormat = Object.freeze({ response: jsonRpcRouteError });
