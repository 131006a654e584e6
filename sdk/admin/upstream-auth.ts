import * as v from 'valibot';
import { GatewayError, NEVER_FORWARDED, type UpstreamClient, upstreamUrlProblem } from '../../core/index.js';
import type { UpstreamAuth } from '../tokens.js';
import { maskSecret, type SecretBox } from '../secret-box.js';

/**
 * How the gateway authenticates to an MCP server or an agent: the body
 * schemas, sealing at rest, opening for the request path, and what answers
 * show (a masked tail, never the secret).
 */

/** Headers the gateway sets itself on these calls: a static auth header may not replace them. */
const RESERVED = new Set([
  ...NEVER_FORWARDED,
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'traceparent',
  'tracestate',
]);

const HeaderName = v.pipe(
  v.string('must be a string'),
  v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be an HTTP header name'),
  v.toLowerCase(),
  v.check((name) => !RESERVED.has(name) && !name.startsWith('proxy-') && !name.startsWith('x-gateway-'), 'is a header the gateway sets itself'),
);
// No CR, LF or NUL: a header value that could split the request.
const HeaderValue = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(8192, 'must be at most 8192 characters'), v.regex(/^[^\r\n\0]*$/, 'must not contain line breaks'));
const Text = (max: number) => v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`));
const ScopeToken = v.pipe(v.string('must be a string'), v.regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/, 'must be an OAuth scope (printable, no spaces or quotes)'));

const NoAuth = v.strictObject({ type: v.literal('none') });
const HeaderAuth = v.strictObject({ type: v.literal('header'), name: v.optional(HeaderName, 'authorization'), value: HeaderValue });
const OAuthAuth = v.strictObject({
  type: v.literal('oauth'),
  client_id: v.optional(Text(512)),
  client_secret: v.optional(Text(4096)),
  scopes: v.optional(v.pipe(v.array(ScopeToken, 'must be a list of scopes'), v.maxLength(50, 'holds at most 50 scopes'))),
});

/** `auth` of an MCP server: none, a static header, or OAuth 2.1 per user. */
export const McpAuthSchema = v.variant('type', [NoAuth, HeaderAuth, OAuthAuth], 'must have a type of "none", "header" or "oauth"');
/** `auth` of an agent: none or a static header. */
export const AgentAuthSchema = v.variant('type', [NoAuth, HeaderAuth], 'must have a type of "none" or "header"');

/** An `auth` as a request gives it, checked by {@link McpAuthSchema} or {@link AgentAuthSchema}: secrets in clear, to seal with {@link sealAuth}. */
export type AuthInput = v.InferOutput<typeof McpAuthSchema>;

/** The auth columns of a row. */
export interface AuthColumns {
  /** `none`, `header` or `oauth`. */
  auth_type: string;
  /** The header's name, for `header` auth; null otherwise. */
  auth_header: string | null;
  /** The secret (a header's value, an OAuth client secret), sealed; null when there is none. */
  auth_secret: string | null;
  /** The secret masked, for answers; null when there is none. */
  auth_masked: string | null;
  /** MCP servers only: `{ client_id, scopes, registered, issuer }` as JSON. */
  oauth?: string | null;
}

interface OAuthColumn {
  client_id: string | null;
  scopes: string[] | null;
  /** The client was registered by the gateway (dynamic registration), not configured. */
  registered: boolean;
  /** Of a registered client: the authorization server it was registered at (absent in rows written before it was kept). */
  issuer?: string | null;
}

/** The columns to store for `auth`, its secret sealed with `aad` (the row's own binding). */
export function sealAuth(box: SecretBox, auth: AuthInput, aad: string): AuthColumns {
  switch (auth.type) {
    case 'none':
      return { auth_type: 'none', auth_header: null, auth_secret: null, auth_masked: null, oauth: null };
    case 'header':
      return { auth_type: 'header', auth_header: auth.name, auth_secret: box.seal(auth.value, aad), auth_masked: maskSecret(auth.value), oauth: null };
    case 'oauth': {
      const oauth: OAuthColumn = { client_id: auth.client_id ?? null, scopes: auth.scopes ?? null, registered: false };
      const secret = auth.client_secret ?? null;
      return { auth_type: 'oauth', auth_header: null, auth_secret: secret === null ? null : box.seal(secret, aad), auth_masked: secret === null ? null : maskSecret(secret), oauth: JSON.stringify(oauth) };
    }
  }
}

/** The columns after the gateway registered an OAuth client for the server. */
export function registeredClient(box: SecretBox, current: string | null, clientId: string, clientSecret: string | null, aad: string, issuer: string | null = null): AuthColumns {
  const previous = current === null ? null : (JSON.parse(current) as OAuthColumn);
  const oauth: OAuthColumn = { client_id: clientId, scopes: previous?.scopes ?? null, registered: true, issuer };
  return {
    auth_type: 'oauth',
    auth_header: null,
    auth_secret: clientSecret === null ? null : box.seal(clientSecret, aad),
    auth_masked: clientSecret === null ? null : maskSecret(clientSecret),
    oauth: JSON.stringify(oauth),
  };
}

/**
 * The auth of a row, secrets opened, for the request path.
 * @throws GatewayError 503 when the secret cannot be opened with this gateway's encryption key.
 */
export function openAuth(box: SecretBox, row: AuthColumns, aad: string, what: string): UpstreamAuth {
  const open = () => {
    try {
      return row.auth_secret === null ? null : box.open(row.auth_secret, aad);
    } catch {
      throw new GatewayError('service_unavailable', `${what}: its credentials cannot be decrypted with this gateway's encryption key; set its auth again.`);
    }
  };
  if (row.auth_type === 'header') return { type: 'header', name: row.auth_header ?? 'authorization', value: open() ?? '' };
  if (row.auth_type === 'oauth') {
    const oauth = row.oauth ? (JSON.parse(row.oauth) as OAuthColumn) : { client_id: null, scopes: null, registered: false };
    return { type: 'oauth', clientId: oauth.client_id, clientSecret: open(), scopes: oauth.scopes, registered: oauth.registered, issuer: oauth.issuer ?? null };
  }
  return { type: 'none' };
}

/** What answers show of a row's auth: never a secret, only its masked tail. */
export function presentAuth(row: AuthColumns): Record<string, unknown> {
  if (row.auth_type === 'header') return { type: 'header', name: row.auth_header, masked_value: row.auth_masked };
  if (row.auth_type === 'oauth') {
    const oauth = row.oauth ? (JSON.parse(row.oauth) as OAuthColumn) : { client_id: null, scopes: null, registered: false };
    return { type: 'oauth', client_id: oauth.client_id, masked_client_secret: row.auth_masked, scopes: oauth.scopes, dynamic_registration: oauth.client_id === null || oauth.registered };
  }
  return { type: 'none' };
}

/** A URL the gateway will call for a workspace: http(s), no user info, and a host the outbound policy allows (else a 400 naming `param`). */
export function checkUpstreamUrl(upstream: UpstreamClient, url: string, param: string): string {
  const problem = upstreamUrlProblem(url);
  if (problem !== null) throw new GatewayError('invalid_request', `Invalid request body: '${param}' ${problem}.`, { param });
  upstream.checkUrl(url, param);
  return url;
}

/** `url` as a body field: a string of at most 2048 characters (checked further by {@link checkUpstreamUrl}). */
export const UrlField = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(2048, 'must be at most 2048 characters'));
/** `request_timeout_ms`: 1 second to 1 hour. */
export const TimeoutField = v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1000, 'must be at least 1000 (1 s)'), v.maxValue(3_600_000, 'must be at most 3600000 (1 hour)'));
