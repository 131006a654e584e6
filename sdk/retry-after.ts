/**
 * Milliseconds a provider asks us to wait, from `retry-after-ms` (ms) or
 * `retry-after` (seconds, or an HTTP date), or null when it asks nothing usable.
 */
export function retryAfterMs(headers: Record<string, string | string[]>, now: number = Date.now()): number | null {
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined) {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return n;
  }
  const after = first(headers['retry-after']);
  if (after === undefined) return null;
  if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return Number(after) * 1000;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
