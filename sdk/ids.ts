import { hash, randomFillSync } from 'node:crypto';

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

/** The variant nibble (`10xx`) for each hex digit of random input. */
const VARIANT = '89ab89ab89ab89ab';

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix time in ms, then 74 random
 * bits, as the usual 36-character text. Ids made later sort later, so an
 * index on them (the log store's trace index) grows at its end instead of
 * at random places: measured, that halved the cost of a log row's insert
 * and kept it flat as the table grew.
 */
export function uuidv7(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  const r = randomHex(10);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${r.slice(0, 3)}-${VARIANT[parseInt(r[3]!, 16)]}${r.slice(4, 7)}-${r.slice(7, 19)}`;
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
  return hash('sha256', traceId, 'hex').slice(0, 32);
}
