import type { UpstreamRequest, UpstreamResponse } from '../core/index.js';
import { readText } from './openai/translate.js';

/** A token answer is a small JSON object; anything bigger is not read. */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;

/** Sends one request to a token endpoint (the pooled client, with a bounded wait). */
export type Send = (request: UpstreamRequest) => Promise<UpstreamResponse>;

/**
 * POSTs an OAuth 2.0 form to a token endpoint and reads its JSON answer.
 * `json` is null when the answer is not a JSON object; the caller maps the
 * status and fields to its own errors (never echoing the credentials).
 */
export async function postTokenForm(send: Send, url: string, form: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> | null }> {
  const upstream = await send({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
  });
  const text = await readText(upstream.body, MAX_TOKEN_ANSWER_BYTES);
  let json: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) json = parsed as Record<string, unknown>;
  } catch {
    /* not JSON: the status tells the caller what happened */
  }
  return { status: upstream.status, json };
}
