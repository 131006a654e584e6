import { hash, randomBytes, randomUUID } from 'node:crypto';

/** Prefix of generated gateway keys, so they are recognisable in secret scanners. */
export const KEY_PREFIX = 'gwk-';

/** A new API key secret: 32 random bytes, base64url. */
export function newSecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** How keys are stored and looked up. Keys are random 256-bit values, so a plain digest suffices (no salt, no KDF). */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** What a listing shows of a key: its prefix and last four characters. */
export function maskKey(secret: string): string {
  return secret.length < 12 ? '****' : `${secret.slice(0, 4)}****${secret.slice(-4)}`;
}

export function newId(): string {
  return randomUUID();
}

/** A random lower-case suffix for generated slugs and ids (the kit's, which features use too). */
export { randomSlug } from '../../sdk/admin/index.js';

export const MIN_TRANSITION_MS = 30 * 60_000;
export type RotationPeriod = 'weekly' | 'monthly';

/** The instant one rotation period after `from` (a calendar month for `monthly`). */
export function addPeriod(from: number, period: RotationPeriod): number {
  if (period === 'weekly') return from + 7 * 86_400_000;
  const d = new Date(from);
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + 1);
  // 31 January + 1 month is the last day of February, not 3 March.
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d.getTime();
}
