import { isObject, type JsonRpcId, type JsonRpcMessage, type RequestContext } from '../../sdk/index.js';

/*
 * MCP's stateless revision, 2026-07-28, beside the session revisions before it
 * (2025-11-25 and older). A 2026-07-28 request carries its protocol version,
 * the client's capabilities and (optionally) its identity in `params._meta`,
 * and names its method (and tool, prompt or resource) in headers too; there is
 * no `initialize` and no session. The gateway tells the two apart per request
 * and speaks each side's revision (see docs/mcp.md, "Protocol revisions").
 */

/** The stateless revision. */
export const MODERN_VERSION = '2026-07-28';
/** The session revisions the gateway serves to clients (the newest first). */
export const SESSION_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

/** The reserved `_meta` keys of a 2026-07-28 request (its envelope). */
export const META = Object.freeze({
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
});

/** JSON-RPC codes of the 2026-07-28 revision's refusals (each answered with HTTP 400). */
export const REVISION_CODES = Object.freeze({
  /** A header disagrees with the body, or a required header is missing. */
  HEADER_MISMATCH: -32020,
  /** The result needs a capability the request did not declare. */
  MISSING_CAPABILITY: -32021,
  /** The request names a protocol version the server does not speak (data: supported, requested). */
  UNSUPPORTED_VERSION: -32022,
});

/** Methods of the session revisions that 2026-07-28 removed: a stateless request for one is "method not found". */
export const REMOVED_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);

/** Results a 2026-07-28 client caches: they carry `ttlMs` and `cacheScope`. */
const CACHEABLE: ReadonlySet<string> = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);

/** What a 2026-07-28 request declares of its client: the envelope, as the gateway forwards or stores it. */
export interface Envelope {
  capabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown> | null;
}

/** A 2026-07-28 request's refusal before anything is forwarded: HTTP status, JSON-RPC code, message, data. */
export interface RevisionRefusal {
  status: number;
  code: number;
  message: string;
  data: Record<string, unknown>;
}

/** The `_meta` of a message's params, when it has one. */
function metaOf(message: JsonRpcMessage): Record<string, unknown> | null {
  const params = message.params;
  return isObject(params) && isObject(params._meta) ? params._meta : null;
}

/** Whether a message claims the stateless revision (its `_meta` names a protocol version, whichever). */
export function claimsModern(message: JsonRpcMessage): boolean {
  const meta = metaOf(message);
  return meta !== null && META.protocolVersion in meta;
}

/** The envelope of a stateless request, or null when it has none. */
export function envelopeOf(message: JsonRpcMessage): Envelope | null {
  const meta = metaOf(message);
  if (meta === null || !isObject(meta[META.clientCapabilities])) return null;
  return { capabilities: meta[META.clientCapabilities] as Record<string, unknown>, clientInfo: isObject(meta[META.clientInfo]) ? (meta[META.clientInfo] as Record<string, unknown>) : null };
}

/** What `Mcp-Name` carries for a method: the tool or prompt's name, the resource's URI (null: no such header). */
export function nameOf(method: string, params: unknown): string | null {
  if (!isObject(params)) return null;
  if (method === 'tools/call' || method === 'prompts/get') return typeof params.name === 'string' ? params.name : null;
  if (method === 'resources/read') return typeof params.uri === 'string' ? params.uri : null;
  return null;
}

/** A header value as 2026-07-28 sends it: printable ASCII as is, anything else as `=?base64?…?=`. */
export function headerText(value: string): string {
  return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** A header value as sent, decoded (`=?base64?…?=` read back). */
function headerValueOf(value: string): string {
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/i.exec(value);
  return m === null ? value : Buffer.from(m[1]!, 'base64').toString('utf8');
}

/**
 * Checks a stateless request as a 2026-07-28 server does before it runs: the version is one the gateway speaks, the
 * capabilities are declared, and the standard headers agree with the body. Null when it may go on.
 */
export function checkModernRequest(ctx: RequestContext, message: JsonRpcMessage, request: boolean): RevisionRefusal | null {
  const meta = metaOf(message)!;
  const version = meta[META.protocolVersion];
  if (version !== MODERN_VERSION) {
    const requested = typeof version === 'string' ? version.slice(0, 64) : null;
    return {
      status: 400,
      code: REVISION_CODES.UNSUPPORTED_VERSION,
      message: `Unsupported protocol version: ${requested ?? 'the request did not name one'}`,
      data: requested === null ? { supported: [MODERN_VERSION] } : { supported: [MODERN_VERSION], requested },
    };
  }
  if (!isObject(meta[META.clientCapabilities])) {
    return { status: 400, code: -32602, message: `Invalid params: the request's _meta has no "${META.clientCapabilities}"`, data: { envelope: { key: META.clientCapabilities, problem: 'missing' } } };
  }
  const mismatch = (header: string, got: string | undefined, want: string) =>
    ({
      status: 400,
      code: REVISION_CODES.HEADER_MISMATCH,
      message: `Header mismatch: ${header} ${got === undefined ? 'is missing' : `names "${got.slice(0, 200)}"`} but the body names "${want.slice(0, 200)}"`,
      data: { mismatch: { header: got === undefined ? '(missing)' : got.slice(0, 200), body: want.slice(0, 200) } },
    }) satisfies RevisionRefusal;
  const headerVersion = ctx.header('mcp-protocol-version');
  if (headerVersion !== MODERN_VERSION && (request || headerVersion !== undefined)) return mismatch('MCP-Protocol-Version', headerVersion, MODERN_VERSION);
  if (!request) return null;
  const method = ctx.header('mcp-method');
  if (method !== message.method) return mismatch('Mcp-Method', method, message.method!);
  const name = nameOf(message.method!, message.params);
  if (name !== null) {
    const sent = ctx.header('mcp-name');
    if (sent === undefined || headerValueOf(sent) !== name) return mismatch('Mcp-Name', sent, name);
  }
  return null;
}

/** The standard headers of a 2026-07-28 request the gateway sends on a session client's behalf. */
export function modernHeaders(method: string, params: unknown, request: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'mcp-protocol-version': MODERN_VERSION };
  if (!request) return headers;
  headers['mcp-method'] = method;
  const name = nameOf(method, params);
  if (name !== null) headers['mcp-name'] = headerText(name);
  return headers;
}

/** A session client's message as a 2026-07-28 request: its params' `_meta` gains the envelope the session was opened with. */
export function withEnvelope(message: JsonRpcMessage, envelope: Envelope): Buffer {
  const params = isObject(message.params) ? { ...message.params } : {};
  const meta = isObject(params._meta) ? { ...params._meta } : {};
  meta[META.protocolVersion] = MODERN_VERSION;
  meta[META.clientCapabilities] = envelope.capabilities;
  if (envelope.clientInfo !== null) meta[META.clientInfo] = envelope.clientInfo;
  params._meta = meta;
  return Buffer.from(JSON.stringify({ ...message, params }));
}

/** A stateless request as a session revision's: the envelope's keys out of `_meta` (the rest, a progress token say, stays). */
export function withoutEnvelope(message: JsonRpcMessage): Buffer {
  const params = isObject(message.params) ? { ...message.params } : null;
  if (params !== null && isObject(params._meta)) {
    const meta = { ...params._meta };
    delete meta[META.protocolVersion];
    delete meta[META.clientCapabilities];
    delete meta[META.clientInfo];
    delete meta[META.logLevel];
    if (Object.keys(meta).length === 0) delete params._meta;
    else params._meta = meta;
  }
  return Buffer.from(JSON.stringify(params === null ? message : { ...message, params }));
}

/** What a session server said of itself when it was initialized. */
export interface SessionServer {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  serverInfo: Record<string, unknown> | null;
  instructions: string | null;
}

/** `server/discover`'s result for a session server, from what its `initialize` said. */
export function discoverResult(server: SessionServer): Record<string, unknown> {
  const capabilities = { ...server.capabilities };
  delete capabilities.tasks;
  const result: Record<string, unknown> = { supportedVersions: [MODERN_VERSION], capabilities, resultType: 'complete', ttlMs: 0, cacheScope: 'private' };
  if (server.instructions !== null) result.instructions = server.instructions;
  if (server.serverInfo !== null) result._meta = { [META.serverInfo]: server.serverInfo };
  return result;
}

/** `initialize`'s result for a session client of a stateless server, from its `server/discover` result. */
export function initializeResult(requested: unknown, discover: Record<string, unknown>, fallbackName: string): Record<string, unknown> {
  const protocolVersion = typeof requested === 'string' && (SESSION_VERSIONS as readonly string[]).includes(requested) ? requested : SESSION_VERSIONS[0];
  const meta = isObject(discover._meta) ? discover._meta : {};
  const serverInfo = isObject(meta[META.serverInfo]) ? meta[META.serverInfo] : { name: fallbackName, version: 'unknown' };
  const result: Record<string, unknown> = { protocolVersion, capabilities: isObject(discover.capabilities) ? discover.capabilities : {}, serverInfo };
  if (typeof discover.instructions === 'string') result.instructions = discover.instructions;
  return result;
}

/**
 * A session server's answer as a 2026-07-28 client expects it: a result says it is complete (`resultType`), a
 * cacheable one says for how long (`ttlMs: 0`, `cacheScope: private`: the gateway does not know), and names its
 * server; tools lose the session revisions' `execution`; "resource not found" (-32002) becomes -32602.
 */
export function modernAnswer(message: Record<string, unknown>, method: string, serverInfo: Record<string, unknown> | null): Record<string, unknown> {
  if (isObject(message.result)) {
    const result: Record<string, unknown> = { ...message.result };
    if (result.resultType === undefined) result.resultType = 'complete';
    if (CACHEABLE.has(method)) {
      if (result.ttlMs === undefined) result.ttlMs = 0;
      if (result.cacheScope === undefined) result.cacheScope = 'private';
    }
    if (method === 'tools/list' && Array.isArray(result.tools)) {
      result.tools = result.tools.map((t: unknown) => {
        if (!isObject(t) || !('execution' in t)) return t;
        const { execution: _, ...rest } = t;
        return rest;
      });
    }
    if (serverInfo !== null) result._meta = { ...(isObject(result._meta) ? result._meta : {}), [META.serverInfo]: serverInfo };
    return { ...message, result };
  }
  if (isObject(message.error) && message.error.code === -32002) {
    return { ...message, error: { ...message.error, code: -32602 } };
  }
  return message;
}

/** Whether an answer asks the client for input (2026-07-28's multi-round-trip requests). */
export function asksForInput(message: Record<string, unknown>): boolean {
  return isObject(message.result) && message.result.resultType === 'input_required';
}

/** A refusal of a server's request to a client the gateway cannot relay it to (its answer, posted back upstream). */
export function declined(id: JsonRpcId): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found: the client is connected through the gateway with MCP 2026-07-28, which has no requests from server to client.' } };
}
