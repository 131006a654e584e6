import { expect, test } from 'vitest';
import { randomHex } from '../../sdk/ids.js';

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
