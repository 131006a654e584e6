import { defineCheck } from '../../../sdk/index.js';
import { countRangeParameters, judgeCount } from './count-range.js';

const TOKEN = /\S+/g;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** Counts the words of a text: runs of non-space characters holding at least one letter or digit (a lone "-" or "—" is not a word). */
export function countWords(text: string): number {
  let n = 0;
  for (const m of text.matchAll(TOKEN)) if (LETTER_OR_DIGIT.test(m[0])) n++;
  return n;
}

/**
 * `default.wordCount { min?, max?, not? }`: passes when the number of words
 * is within [min, max] (inverted by `not`). A word is a whitespace-separated
 * token with at least one letter or digit, so scripts written without spaces
 * (Chinese, Japanese, Thai) count a whole run as one word.
 */
export const wordCount = defineCheck({
  parameters: countRangeParameters('words'),
  // Only a maximum can be exceeded by part of the text (and stays exceeded); a minimum waits for the whole text.
  stream: (range) => (range.max !== undefined && !range.not ? { scope: 'all', parameters: { ...range, min: undefined } } : null),
  run(range, { text }) {
    return judgeCount(countWords(text), range, 'words');
  },
});
