import type { IncomingHttpHeaders } from 'node:http';
import { mightHoldSecret, REDACTED, redactJson, scrubText } from './redact.js';

/** Most headers kept of one request (the first ones, in the order received). */
export const MAX_HEADERS = 64;
/** Longest header value kept, in characters, the cut marker included. */
export const MAX_HEADER_CHARS = 1024;
/** Ends a value cut at {@link MAX_HEADER_CHARS}. */
export const CUT_MARKER = '…[truncated]';

/**
 * Header names whose value is a credential, whatever it looks like: every name containing one of these
 * words. That covers `authorization`, `proxy-authorization`, `cookie`, `x-gateway-api-key`, `api-key`,
 * `x-api-key`, `x-goog-api-key`, `x-gateway-virtual-key`, `x-amz-security-token`, `mcp-session-id`, and
 * the CSRF token of a dashboard session. Names reach it in lower case.
 */
// `websocket-protocol`: a browser's WebSocket carries its credential as a subprotocol (`openai-insecure-api-key.<key>`).
const SECRET_HEADER = /key|token|secret|passw|auth|signature|credential|session|cookie|csrf|xsrf|websocket-protocol/;

/** Removes `scheme://user:password@` from a text: the core's `withoutUserInfo`, passed in (see {@link headersForLog}). */
export type UserInfoScrubber = (text: string) => string;

/** Without the core's helper: a value that might hold URL user info is not kept at all. */
export const WITHOUT_HELPER: UserInfoScrubber = (text) => (text.includes('@') ? REDACTED : text);

/** True when a header value holds an `@`, so {@link headersForLog} needs the user-info helper for it. */
export function mayHoldUserInfo(raw: IncomingHttpHeaders): boolean {
  for (const name in raw) {
    const value = raw[name];
    if (typeof value === 'string' ? value.includes('@') : value !== undefined && value.some((v) => v.includes('@'))) return true;
  }
  return false;
}

/** Characters a request's headers hold, for the queue's byte bound (no copy, no JSON). */
export function headerChars(raw: IncomingHttpHeaders): number {
  let n = 0;
  for (const name in raw) {
    const value = raw[name];
    n += name.length + (typeof value === 'string' ? value.length : value === undefined ? 0 : value.join().length);
  }
  return n;
}

/**
 * The request's headers as stored: lower-case names, the first {@link MAX_HEADERS}, each value as
 * sent (several values joined by `, `) except:
 * - a credential header (see SECRET_HEADER) keeps its name and has its value replaced by `[REDACTED]`;
 * - an inline `x-gateway-config` is kept with its credential fields redacted by the log's JSON redactor
 *   (`redactJson`, with `fields`: the declared credential target fields), and only when the gateway
 *   accepted it as the request's config (`configAccepted`): a config refused or never read may carry a
 *   credential in any field (a key sent in a wrongly typed one), so it is `[REDACTED]` whole, as is
 *   one that is not JSON. A saved config id is kept like any value;
 * - key-shaped text (`sk-…`, `Bearer …`; `scrubText`) and URL user info (`scheme://user:pass@`, removed
 *   by `withoutUserInfo`) are taken out of every value;
 * - a value longer than {@link MAX_HEADER_CHARS} is cut, after redaction, and ends with {@link CUT_MARKER}.
 *
 * `withoutUserInfo` is the core's helper (core/upstream/urls.ts, in the SDK's entry point). It is a
 * parameter because this module also runs on the log writer thread, which does not load the core unless
 * a value holds an `@` (thread/writer.ts).
 */
export function headersForLog(raw: IncomingHttpHeaders, configAccepted: boolean, fields: ReadonlySet<string> | null, withoutUserInfo: UserInfoScrubber): Record<string, string> {
  const out: Record<string, string> = {};
  let kept = 0;
  for (const received in raw) {
    const value = raw[received];
    if (value === undefined) continue;
    if (kept === MAX_HEADERS) break;
    const name = received.toLowerCase();
    if (name === '__proto__') continue;
    kept++;
    out[name] = valueForLog(name, typeof value === 'string' ? value : value.join(', '), configAccepted, fields, withoutUserInfo);
  }
  return out;
}

function valueForLog(name: string, value: string, configAccepted: boolean, fields: ReadonlySet<string> | null, withoutUserInfo: UserInfoScrubber): string {
  if (value === '') return value;
  if (SECRET_HEADER.test(name)) return REDACTED;
  let text: string;
  if (name === 'x-gateway-config' && isInline(value)) {
    if (!configAccepted) return REDACTED;
    try {
      text = JSON.stringify(redactJson(JSON.parse(value), fields));
    } catch {
      return REDACTED;
    }
  } else {
    text = mightHoldSecret(value) ? scrubText(value) : value;
  }
  return cut(withoutUserInfo(text));
}

/** Inline JSON, told from a saved config id as the config plugin does. */
function isInline(value: string): boolean {
  return value.trimStart().startsWith('{');
}

function cut(text: string): string {
  if (text.length <= MAX_HEADER_CHARS) return text;
  let end = MAX_HEADER_CHARS - CUT_MARKER.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // not half a surrogate pair
  return text.slice(0, end) + CUT_MARKER;
}
