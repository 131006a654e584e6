import { expect, test } from 'vitest';
import { pickWeighted, weightOf } from '../../../sdk/index.js';

/** mulberry32: a small seeded PRNG, so the draw counts are the same on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('draws follow the weights; weight 0 is never chosen', () => {
  const random = seeded(42);
  const weights = [1, 3, 0, 6];
  const counts = [0, 0, 0, 0];
  const draws = 100_000;
  for (let i = 0; i < draws; i++) counts[pickWeighted(weights, random())]!++;
  expect(counts[2]).toBe(0);
  expect(counts[0]! / draws).toBeCloseTo(0.1, 2);
  expect(counts[1]! / draws).toBeCloseTo(0.3, 2);
  expect(counts[3]! / draws).toBeCloseTo(0.6, 2);
});

test('edges: r at 0 and just below 1, all zero weights, fractional weights', () => {
  expect(pickWeighted([0, 2, 0], 0)).toBe(1);
  expect(pickWeighted([1, 1, 0], 0.9999999999)).toBe(1);
  expect(pickWeighted([0, 0], 0.5)).toBe(-1);
  expect(pickWeighted([0.25, 0.75], 0.2)).toBe(0);
  expect(pickWeighted([0.25, 0.75], 0.3)).toBe(1);
});

test('weight defaults to 1; negative or non-numeric counts as 0', () => {
  expect(weightOf({})).toBe(1);
  expect(weightOf({ weight: 0 })).toBe(0);
  expect(weightOf({ weight: -2 })).toBe(0);
  expect(weightOf({ weight: 'x' })).toBe(0);
  expect(weightOf({ weight: 2.5 })).toBe(2.5);
});
