import type { IncomingHttpHeaders } from 'node:http';
import { readText, type UpstreamClient } from '../../sdk/index.js';

/** The `fetch` shape the MCP SDK's OAuth helpers take. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** OAuth metadata, registrations and token answers are small JSON documents. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * A `fetch` over the gateway's pooled client, so every call the OAuth flow
 * makes (metadata discovery, client registration, token requests) obeys the
 * outbound host policy like any other upstream call, with a bounded wait and
 * a bounded answer. Redirects are not followed (undici's default): a
 * metadata document that moved is a failed lookup, not a hop to anywhere.
 */
export function upstreamFetch(upstream: UpstreamClient, timeoutMs: number): FetchLike {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input.href;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const raw = init?.body;
    const body = raw == null ? null : typeof raw === 'string' ? raw : raw instanceof URLSearchParams ? raw.toString() : Buffer.from(await new Response(raw).arrayBuffer());
    const signal = init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    const answer = await upstream.send({ method: init?.method ?? 'GET', url, headers, body }, signal, timeoutMs);
    const text = await readText(answer.body, MAX_ANSWER_BYTES);
    const empty = answer.status === 204 || answer.status === 304;
    return new Response(empty ? null : text, { status: answer.status, headers: toHeaders(answer.headers) });
  };
}

function toHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
  }
  return out;
}
