import { createHash, randomFillSync } from 'node:crypto';

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

const HEX32 = /^[0-9a-f]{32}$/;
const ZERO32 = '0'.repeat(32);

/**
 * The W3C trace id for a gateway trace id: the id itself when it is 32 hex
 * digits (a UUID without its dashes counts, so generated ids map one to
 * one), else the first 32 hex digits of its SHA-256.
 */
export function w3cTraceId(traceId: string): string {
  const bare = traceId.toLowerCase().replace(/-/g, '');
  if (HEX32.test(bare) && bare !== ZERO32) return bare;
  return createHash('sha256').update(traceId).digest('hex').slice(0, 32);
}
