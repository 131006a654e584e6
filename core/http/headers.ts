import type { IncomingHttpHeaders } from 'node:http';

/** Connection-level headers (RFC 9110 §7.6.1) that must not be forwarded by a proxy. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Request headers a target may never forward from the client
 * (`forward_headers`): the hop-by-hop ones, and those that frame or address
 * the request the gateway sends (its own body length, its own host). Sent
 * as the client had them, they would contradict the request actually sent
 * (a `content-length` of the client's body on a body `override_params`
 * rewrote). Names starting with `proxy-` are refused as well.
 */
export const NEVER_FORWARDED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length', 'host', 'expect']);

/** False for a header name in {@link NEVER_FORWARDED} or starting with `proxy-`, in any case. */
export function isForwardable(name: string): boolean {
  const lower = name.toLowerCase();
  return !NEVER_FORWARDED.has(lower) && !lower.startsWith('proxy-');
}

/** Copies response headers from upstream, minus hop-by-hop ones and any named in `connection`. */
export function forwardableHeaders(headers: IncomingHttpHeaders, drop?: ReadonlySet<string>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = headers.connection;
  const extra = typeof named === 'string' && named !== 'keep-alive' && named !== 'close' ? new Set(named.toLowerCase().split(/\s*,\s*/)) : null;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || extra?.has(name) || drop?.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth === undefined || auth.length < 8) return undefined;
  if (auth.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  const token = auth.slice(7).trim();
  return token === '' ? undefined : token;
}
