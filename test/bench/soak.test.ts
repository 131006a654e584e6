import { expect, test } from 'vitest';
import { slope } from './soak.js';

test('the soak reports the least-squares slope of RSS over minutes', () => {
  expect(slope([[0, 100], [1, 101], [2, 102], [3, 103]])).toBeCloseTo(1, 10);
  expect(slope([[3, 150], [4, 150], [5, 150]])).toBe(0);
  // Noise around a slow climb: the line through it, not the ends.
  expect(slope([[0, 100], [1, 103], [2, 100.2], [3, 103.2], [4, 100.4]])).toBeCloseTo(0.1, 10);
  expect(slope([[0, 1]])).toBeNaN();
});
