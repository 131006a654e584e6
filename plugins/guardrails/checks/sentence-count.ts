import { defineCheck } from '../../../sdk/index.js';
import { countRangeParameters, judgeCount } from './count-range.js';

/** A sentence ends at `.`, `!`, `?`, `…` (or their CJK forms) followed by whitespace or the end of the text, or at a blank line. */
const SENTENCE_END = /[.!?…。！？]+["'”’)\]]*(?=\s|$)|\n\s*\n/u;
const HAS_CONTENT = /[\p{L}\p{N}]/u;

/** Counts the sentences of a text: the pieces between sentence ends that hold a letter or digit. */
export function countSentences(text: string): number {
  let n = 0;
  for (const piece of text.split(SENTENCE_END)) if (HAS_CONTENT.test(piece)) n++;
  return n;
}

/**
 * `default.sentenceCount { min?, max?, not? }`: passes when the number of
 * sentences is within [min, max] (inverted by `not`). A heuristic: text
 * after the last terminator counts as a sentence, decimals (3.14) do not
 * split, abbreviations followed by a space ("e.g. this") do.
 */
export const sentenceCount = defineCheck({
  parameters: countRangeParameters('sentences'),
  // Only a maximum can be exceeded by part of the text (and stays exceeded); a minimum waits for the whole text.
  stream: (range) => (range.max !== undefined && !range.not ? { scope: 'all', parameters: { ...range, min: undefined } } : null),
  run(range, { text }) {
    return judgeCount(countSentences(text), range, 'sentences');
  },
});
