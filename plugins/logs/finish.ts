import { assembleSSE } from '../../sdk/observe/assemble.js';
import type { CaptureMode, LogEntry } from './entry.js';
import { headersForLog, WITHOUT_HELPER, type UserInfoScrubber } from './headers.js';
import { redactBody, redactJson } from './redact.js';

/** What finishing an entry needs to know: the capture settings. Plain data, so it crosses to a worker thread. */
export interface FinishOptions {
  capture: CaptureMode;
  captureBytes: number;
  /** Longest body kept in `full` mode. */
  scanLimit: number;
  /**
   * The declared credential target fields and their aliases (`api.targetFields`): redacted in a stored
   * inline `x-gateway-config` besides the fields the log's name rule catches.
   */
  credentialFields?: readonly string[];
}

/** The set of each options' credential fields, made once (options live as long as their writer). */
const fieldSets = new WeakMap<readonly string[], ReadonlySet<string>>();

function credentialSet(options: FinishOptions): ReadonlySet<string> | null {
  const fields = options.credentialFields;
  if (fields === undefined || fields.length === 0) return null;
  let set = fieldSets.get(fields);
  if (set === undefined) fieldSets.set(fields, (set = new Set(fields)));
  return set;
}

/**
 * The costly part of making an entry, done where it is written (the writer
 * thread, or the in-process writer just before its insert) rather than on the
 * response path: a stream's text is assembled from its SSE events; bodies are
 * redacted, then cut at the capture limit on a character boundary; hook
 * results are redacted; the request's headers, held as received, are filtered
 * and redacted into `request_headers` (headers.ts). Works in place and is
 * idempotent, so a batch that is written again after a failed attempt is
 * unchanged by a second pass.
 *
 * `withoutUserInfo`: the core's URL clean-up (the SDK's `withoutUserInfo`); without it, a header value
 * holding an `@` is not kept at all.
 */
export function finishEntry(e: LogEntry, options: FinishOptions, withoutUserInfo: UserInfoScrubber = WITHOUT_HELPER): LogEntry {
  if (e.received_headers !== null) {
    e.request_headers = headersForLog(e.received_headers, e.config_accepted, credentialSet(options), withoutUserInfo);
    e.received_headers = null;
  }
  if (e.response_stream) {
    if (e.response_body !== null) e.response_body = assembleSSE(e.response_body).text;
    e.response_stream = false;
  }
  if (options.capture === 'off') {
    e.request_body = null;
    e.response_body = null;
  } else {
    const limit = options.capture === 'full' ? options.scanLimit : options.captureBytes;
    if (e.request_body !== null) [e.request_body, e.request_body_truncated] = cutAt(redactBody(e.request_body), limit, e.request_body_truncated);
    if (e.response_body !== null) [e.response_body, e.response_body_truncated] = cutAt(redactBody(e.response_body), limit, e.response_body_truncated);
  }
  if (e.hook_results !== null && e.hook_results !== undefined) e.hook_results = redactJson(e.hook_results);
  return e;
}

/** `text` cut to at most `limit` UTF-8 bytes, never inside a character; with whether anything is missing. */
function cutAt(text: string, limit: number, cutBefore: boolean): [string, boolean] {
  if (text.length <= limit / 3 || Buffer.byteLength(text) <= limit) return [text, cutBefore];
  let cut = Buffer.from(text).subarray(0, limit).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return [cut, true];
}
