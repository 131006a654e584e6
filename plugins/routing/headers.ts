import { retryAfterMs } from '../../sdk/index.js';

/**
 * What a provider's answer says about its rate limits (docs/configuration.md#routing): requests and
 * tokens left and when each bucket resets, and a `retry-after`. OpenAI's and Azure's
 * `x-ratelimit-remaining-*` / `x-ratelimit-reset-*` (Go-style durations: `12ms`, `1s`, `6m0s`),
 * Anthropic's `anthropic-ratelimit-*-remaining` / `-reset` (RFC 3339 times; the combined, input and
 * output token buckets, the smallest counting), and a 429's `retry-after` (seconds or an HTTP
 * date) or `retry-after-ms`. Times are epoch ms on the caller's clock.
 */
export interface Headroom {
  requestsLeft?: number;
  requestsResetAt?: number;
  tokensLeft?: number;
  tokensResetAt?: number;
  /** Not before this (a 429's `retry-after`). */
  retryAt?: number;
}

type Headers = Record<string, string | string[] | undefined>;

const one = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** A count a header gives; Azure's placeholder -1 (and anything unreadable) counts as not given. */
function count(headers: Headers, name: string): number | undefined {
  const raw = one(headers, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g;

/** A Go-style duration (`1h2m3.5s`, `12ms`, `0s`) in ms; undefined when it is not one. */
export function goDurationMs(text: string): number | undefined {
  let total = 0;
  let matched = 0;
  for (const m of text.matchAll(DURATION_PART)) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched += m[0].length;
  }
  return matched > 0 && matched === text.length ? total : undefined;
}

/** A reset header: a duration from now (OpenAI, Azure) or a time (Anthropic, RFC 3339). */
function resetAt(headers: Headers, name: string, now: number): number | undefined {
  const raw = one(headers, name)?.trim();
  if (raw === undefined || raw === '') return undefined;
  const duration = goDurationMs(raw);
  if (duration !== undefined) return now + duration;
  if (/^\d+(\.\d+)?$/.test(raw)) return now + Number(raw) * 1000;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? at : undefined;
}

const min = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
const max = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/** What the answer's headers say, or null when they say nothing about limits. */
export function headroomOf(status: number, headers: Headers, now: number): Headroom | null {
  const out: Headroom = {};
  out.requestsLeft = min(count(headers, 'x-ratelimit-remaining-requests'), count(headers, 'anthropic-ratelimit-requests-remaining'));
  out.requestsResetAt = max(resetAt(headers, 'x-ratelimit-reset-requests', now), resetAt(headers, 'anthropic-ratelimit-requests-reset', now));
  out.tokensLeft = min(
    min(count(headers, 'x-ratelimit-remaining-tokens'), count(headers, 'anthropic-ratelimit-tokens-remaining')),
    count(headers, 'anthropic-ratelimit-input-tokens-remaining'),
  );
  out.tokensResetAt = max(
    max(resetAt(headers, 'x-ratelimit-reset-tokens', now), resetAt(headers, 'anthropic-ratelimit-tokens-reset', now)),
    resetAt(headers, 'anthropic-ratelimit-input-tokens-reset', now),
  );
  // A rate limit's `retry-after` (a 503's says the service is down, which the breaker judges, not the quota).
  if (status === 429) {
    const ms = retryAfterMs(headers as Record<string, string | string[]>, now);
    if (ms !== null) out.retryAt = now + ms;
    // A 429 without any hint still means "not now": a second, as the SDKs wait at least.
    if (out.retryAt === undefined) out.retryAt = now + 1000;
  }
  let any = false;
  for (const k in out) {
    if (out[k as keyof Headroom] === undefined) delete out[k as keyof Headroom];
    else any = true;
  }
  return any ? out : null;
}
