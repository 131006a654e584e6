import { performance } from 'node:perf_hooks';
import { isObject, GatewayError, SSEParser, type GatewayResponse, jsonRpcErrorBody, type JsonRpcId, jsonResponse, JSONRPC, type RequestContext, type UpstreamBody, type UpstreamResponse } from '../../sdk/index.js';
import { MCP_ERRORS, mcpError } from './errors.js';

/*
 * The MCP gateway's own JSON-RPC answers (failures, timeouts) and how it reads
 * an upstream's answers.
 */

/** JSON-RPC codes MCP (and its SDK) give meaning to beyond JSON-RPC's own. */
export const MCP_CODES = Object.freeze({
  /** The MCP SDK's `RequestTimeout`: clients report it as a timed-out request. */
  REQUEST_TIMEOUT: -32001,
  /** MCP's `URLElicitationRequired`: the user must open a URL (here: to authorize the gateway) and try again. */
  URL_ELICITATION_REQUIRED: -32042,
});

/** Thrown when the upstream did not answer within the request's timeout. */
export class TimedOut extends Error {}

export const TIMED_OUT = Symbol('timed out');

/** Reads a body whole by `deadline` (performance.now ms): its text, TIMED_OUT, or the GatewayError that cut it. */
export async function readWithin(body: UpstreamBody, limit: number, deadline: number): Promise<string | typeof TIMED_OUT | GatewayError> {
  let timer: NodeJS.Timeout | null = null;
  // Over the limit is the size refusal; any other failure while reading (a reset, a stall) is the answer breaking off.
  const read = body.text(limit).catch((err: unknown) => (err instanceof GatewayError && err.code === 'upstream_invalid_response' ? err : mcpError('mcp_upstream_error', 'the answer broke off')));
  try {
    return await Promise.race([
      read,
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - performance.now()));
      }),
    ]);
  } finally {
    if (timer !== null) clearTimeout(timer);
    // Unread at the deadline: the request is stopped (a body already read ignores this).
    body.abort();
  }
}

export function timeoutError(timeoutMs: number): GatewayError {
  return mcpError('mcp_upstream_timeout', `Request timed out: the MCP server did not answer within ${timeoutMs} ms; the gateway cancelled the request.`);
}

export function rpcAnswer(id: JsonRpcId, code: number, message: string, data?: unknown): GatewayResponse {
  return jsonResponse(200, jsonRpcErrorBody(id, data === undefined ? { code, message } : { code, message, data }));
}

/** A failure of the upstream (unreachable, an unreadable answer), as the JSON-RPC error the client gets; recorded for the log. */
export function upstreamFailure(ctx: RequestContext, id: JsonRpcId, message: string, upstreamStatus: number | null, code: keyof typeof MCP_ERRORS = 'mcp_upstream_error'): GatewayResponse {
  ctx.error = mcpError(code, message);
  return rpcAnswer(id, JSONRPC.INTERNAL_ERROR, message, upstreamStatus === null ? undefined : { upstream_status: upstreamStatus });
}

/** No answer within the request's timeout: the MCP SDK's `RequestTimeout`, with the timeout in `data`. */
export function timeoutAnswer(ctx: RequestContext, id: JsonRpcId, timeoutMs: number, status = 200): GatewayResponse {
  ctx.error = timeoutError(timeoutMs);
  return jsonResponse(status, jsonRpcErrorBody(id, { code: MCP_CODES.REQUEST_TIMEOUT, message: ctx.error.message, data: { timeout_ms: timeoutMs } }));
}

export function isEventStream(upstream: UpstreamResponse): boolean {
  const type = headerValue(upstream.headers['content-type']);
  return type !== undefined && type.toLowerCase().startsWith('text/event-stream');
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The JSON-RPC answer to `id` in an upstream's reply to a request the gateway made itself (`server/discover`,
 * `initialize`): a JSON body, or the event of an event stream that carries it. Null when there is none by `deadline`.
 */
export async function readOwnAnswer(upstream: UpstreamResponse, id: JsonRpcId, limit: number, deadline: number): Promise<Record<string, unknown> | null> {
  const text = await readWithin(upstream.body, limit, deadline);
  if (typeof text !== 'string') return null;
  let candidates = [text];
  if (isEventStream(upstream)) {
    const parser = new SSEParser();
    candidates = [...parser.push(text), ...parser.end()].map((e) => e.data).filter((d) => d !== '');
  }
  for (const data of candidates) {
    try {
      const message: unknown = JSON.parse(data);
      if (isObject(message) && message.id === id && ('result' in message || 'error' in message)) return message;
    } catch {
      /* not this one */
    }
  }
  return null;
}
