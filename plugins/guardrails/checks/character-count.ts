import { defineCheck } from '../../../sdk/index.js';
import { countRangeParameters, judgeCount } from './count-range.js';

/** Counts Unicode code points (an emoji is 1 or more, never half of one); spaces and newlines count. */
export function countCharacters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * `default.characterCount { min?, max?, not? }`: passes when the number of
 * characters (Unicode code points, whitespace included) is within
 * [min, max] (inverted by `not`).
 */
export const characterCount = defineCheck({
  parameters: countRangeParameters('characters'),
  // Only a maximum can be exceeded by part of the text (and stays exceeded); a minimum waits for the whole text.
  stream: (range) => (range.max !== undefined && !range.not ? { scope: 'all', parameters: { ...range, min: undefined } } : null),
  run(range, { text }) {
    return judgeCount(countCharacters(text), range, 'characters');
  },
});
