import { assembleSSE } from '../../sdk/observe/assemble.js';
import type { CaptureMode, LogEntry } from './entry.js';
import { redactBody, redactJson } from './redact.js';

/** What finishing an entry needs to know: the capture settings. Plain data, so it crosses to a worker thread. */
export interface FinishOptions {
  capture: CaptureMode;
  captureBytes: number;
  /** Longest body kept in `full` mode. */
  scanLimit: number;
}

/**
 * The costly part of making an entry, done where it is written (the writer
 * thread, or the in-process writer just before its insert) rather than on the
 * response path: a stream's text is assembled from its SSE events; bodies are
 * redacted, then cut at the capture limit on a character boundary; hook
 * results are redacted. Works in place and is idempotent, so a batch that is
 * written again after a failed attempt is unchanged by a second pass.
 */
export function finishEntry(e: LogEntry, options: FinishOptions): LogEntry {
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
