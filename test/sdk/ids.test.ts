import { expect, test } from 'vitest';
import { randomHex, uuidv7, w3cTraceId } from '../../sdk/ids.js';

test('randomHex: lower-case hex of the asked length, no repeats across pool refills', () => {
  const seen = new Set<string>();
  // 8 KiB per refill: 3,000 span ids of 8 bytes cross it twice.
  for (let i = 0; i < 3000; i++) {
    const id = randomHex(8);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    seen.add(id);
  }
  expect(seen.size).toBe(3000);
  expect(randomHex(16)).toMatch(/^[0-9a-f]{32}$/);
  expect(randomHex(10_000)).toHaveLength(20_000);
});

test('uuidv7: version 7, RFC 9562 variant, the time in its first 48 bits, later ids sort later', () => {
  const at = Date.UTC(2026, 10, 25, 4, 0, 0, 123);
  const id = uuidv7(at);
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
  const ids = Array.from({ length: 2000 }, (_, i) => uuidv7(at + i));
  expect([...ids].sort()).toEqual(ids);
  expect(new Set(Array.from({ length: 2000 }, () => uuidv7(at))).size).toBe(2000);
  // Dashes removed, it is a W3C trace id as it stands (not hashed).
  expect(w3cTraceId(id)).toBe(id.replace(/-/g, ''));
});
