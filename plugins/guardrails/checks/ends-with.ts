import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { parameters } from './params.js';

/**
 * `default.endsWith { suffix, not? }`: passes when the text, with trailing
 * whitespace removed, ends with `suffix` (case-sensitive), or does not when
 * `not` is set.
 */
export const endsWith = defineCheck({
  parameters: parameters({
    suffix: v.pipe(v.string('suffix must be a string'), v.minLength(1, 'suffix must not be empty')),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  run({ suffix, not }, { text }) {
    const ends = text.trimEnd().endsWith(suffix);
    const verdict = not ? !ends : ends;
    return {
      verdict,
      explanation: verdict
        ? `The text ${ends ? 'ends' : 'does not end'} with "${suffix}", as required.`
        : `The text ${ends ? 'ends' : 'does not end'} with "${suffix}"${not ? ', which it must not' : ''}.`,
      data: { endsWith: ends },
    };
  },
});
