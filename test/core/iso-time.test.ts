import { describe, expect, test } from 'vitest';
import { isoTime } from '../../core/iso-time.js';

describe('isoTime', () => {
  test('writes what Date#toISOString writes: the edges of a second, of the range, fractions of a millisecond, and times out of order', () => {
    const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1_796_688_130_249, 1_796_688_130_009, 1_796_688_130_090, 1_796_688_130_000, 1_700_000_000_000, 1_796_688_130_999, 253_402_300_799_999, 1.5, -1, 1_796_688_130_249.7, 1_796_688_130_999.999, 999.5];
    for (const ms of [...times, ...times.reverse()]) expect(isoTime(ms), String(ms)).toBe(new Date(ms).toISOString());
  });
});
