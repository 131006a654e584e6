import type { TargetState } from './state.js';

/** Why a target was left out of a request's choice. */
export type SkipReason = 'retry_after' | 'requests_exhausted' | 'tokens_exhausted' | 'budget_spent' | 'rate_limited' | 'slower';

/** A target that cannot take the request now, and until when (epoch ms; Infinity for a budget that never resets). */
export interface Out {
  reason: Exclude<SkipReason, 'slower'>;
  until: number;
  /** The limit policy that blocks it (`budget_spent`, `rate_limited`). */
  policy?: string;
}

/**
 * Whether a target can take a request estimated at `tokens` now: not while a `retry-after` runs, nor
 * while its request or token bucket (as its last answer said, less what was sent since) cannot take it
 * before the bucket resets. A bucket whose reset time is unknown or past is taken as refilled.
 */
export function outOfHeadroom(state: TargetState | null, tokens: number, now: number): Out | null {
  if (state === null) return null;
  if (state.retryAt !== undefined && state.retryAt > now) return { reason: 'retry_after', until: state.retryAt };
  if (state.requestsLeft !== undefined && state.requestsLeft < 1 && state.requestsResetAt !== undefined && state.requestsResetAt > now) {
    return { reason: 'requests_exhausted', until: state.requestsResetAt };
  }
  if (state.tokensLeft !== undefined && state.tokensLeft < tokens && state.tokensResetAt !== undefined && state.tokensResetAt > now) {
    return { reason: 'tokens_exhausted', until: state.tokensResetAt };
  }
  return null;
}

/**
 * The targets counted as fastest: those whose average time to an answer is within 25% (and 20 ms) of
 * the fastest known, and those not measured yet (so a new target gets its share and is measured).
 */
export function fastest(latencies: ReadonlyArray<number | undefined>): boolean[] {
  let best = Infinity;
  for (const l of latencies) if (l !== undefined && l < best) best = l;
  return latencies.map((l) => l === undefined || best === Infinity || l <= best * 1.25 + 20);
}

/** A string's 53-bit hash (cyrb53): fast, well spread, the same on every instance. */
export function hash53(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * Weighted rendezvous hashing: the target a session belongs to, the same on every instance with no
 * shared state, in proportion to the weights over many sessions; when it cannot take a request, the
 * session's next-best target (the others' sessions do not move). Returns indexes best first.
 */
export function rendezvous(session: string, ids: readonly string[], weights: readonly number[]): number[] {
  const scores = ids.map((id, i) => {
    const u = (hash53(`${session}\n${id}`) + 1) / (2 ** 53 + 2); // (0, 1)
    return weights[i]! > 0 ? weights[i]! / -Math.log(u) : -Infinity;
  });
  return ids.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]!);
}
