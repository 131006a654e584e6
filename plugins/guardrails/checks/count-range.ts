import * as v from 'valibot';
import { parameters } from './params.js';

/** A bound of a count range: a whole number, 0 or more. */
const bound = (name: string) =>
  v.optional(v.pipe(v.number(`${name} must be a number`), v.integer(`${name} must be a whole number`), v.minValue(0, `${name} must be 0 or more`)));

/**
 * Parameters shared by the counting checks: `{ min?, max?, not? }`. At least
 * one bound is required and `min` may not exceed `max`.
 */
export function countRangeParameters(unit: string) {
  return v.pipe(
    parameters({
      min: bound('min'),
      max: bound('max'),
      not: v.optional(v.boolean('not must be true or false'), false),
    }),
    v.check((p) => p.min !== undefined || p.max !== undefined, `give at least one of min and max (the allowed number of ${unit})`),
    v.forward(
      v.check((p) => p.min === undefined || p.max === undefined || p.min <= p.max, 'min must not be greater than max'),
      ['min'],
    ),
  );
}

export interface CountRange {
  min?: number | undefined;
  max?: number | undefined;
  not: boolean;
}

/** The verdict of a counting check: the count within [min, max], inverted by `not`. */
export function judgeCount(count: number, { min, max, not }: CountRange, unit: string) {
  const within = (min === undefined || count >= min) && (max === undefined || count <= max);
  const verdict = not ? !within : within;
  const range = min !== undefined && max !== undefined ? `between ${min} and ${max}` : min !== undefined ? `at least ${min}` : `at most ${max}`;
  return {
    verdict,
    explanation: verdict
      ? `The text has ${count} ${unit}, ${not ? 'not ' : ''}${range} as required.`
      : `The text has ${count} ${unit}; it must ${not ? 'not ' : ''}have ${range}.`,
    data: { count, min: min ?? null, max: max ?? null },
  };
}
