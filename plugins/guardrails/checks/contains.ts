import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';

/**
 * `default.contains { words, operator }`: `any` passes when at least one word
 * occurs in the text, `all` when every word does, `none` when no word does.
 * Matching is case-insensitive and by substring.
 */
export const contains = defineCheck({
  parameters: v.pipe(
    v.strictObject({
      words: v.pipe(v.array(v.string('each word must be a string'), 'words must be an array of strings'), v.minLength(1, 'words must not be empty')),
      operator: v.optional(v.picklist(['any', 'all', 'none'], 'operator must be any, all or none'), 'any'),
    }),
    v.transform((p) => ({ operator: p.operator, words: p.words, lower: p.words.map((w) => w.toLowerCase()) })),
  ),
  // Only `none` can fail on part of the text: a listed word in the window is final. A word longer than the
  // window is found once the stream ends.
  stream: (p) => (p.operator === 'none' ? { scope: 'window' } : null),
  run({ words, lower, operator }, { text }) {
    const haystack = text.toLowerCase();
    const found = words.filter((_, i) => haystack.includes(lower[i]!));
    const verdict = operator === 'any' ? found.length > 0 : operator === 'all' ? found.length === words.length : found.length === 0;
    const explanation = verdict
      ? `The text satisfies "${operator}" for the listed words.`
      : operator === 'none'
        ? `The text contains words it must not: ${found.join(', ')}.`
        : operator === 'all'
          ? `The text lacks: ${words.filter((w) => !found.includes(w)).join(', ')}.`
          : 'The text contains none of the listed words.';
    return { verdict, explanation, data: { found } };
  },
});
