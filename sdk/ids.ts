import { randomFillSync } from 'node:crypto';

/** Random bytes drawn per refill: one call to the CSPRNG serves hundreds of ids. */
const POOL_BYTES = 8192;
let pool = Buffer.allocUnsafe(0);
let offset = 0;

/**
 * `bytes` random bytes as lower-case hex, from a pooled buffer refilled by
 * the CSPRNG (the same source as `randomBytes`, one call per 8 KiB instead
 * of one per id). For trace and span ids, which are needed per request.
 */
export function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(Math.max(POOL_BYTES, bytes)));
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}
