import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';

/**
 * `default.regexMatch { rule, not? }`: passes when the text matches `rule`
 * (a JavaScript regular expression, no flags), or does not when `not` is set.
 * The expression is compiled once, when the config is first seen.
 */
export const regexMatch = defineCheck({
  parameters: v.strictObject({
    rule: v.pipe(
      v.string('rule must be a string'),
      v.minLength(1, 'rule must not be empty'),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        try {
          return new RegExp(dataset.value);
        } catch {
          addIssue({ message: 'rule is not a valid regular expression' });
          return NEVER;
        }
      }),
    ),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  run({ rule, not }, { text }) {
    const match = rule.exec(text);
    const verdict = not ? match === null : match !== null;
    return {
      verdict,
      explanation: verdict
        ? `The text ${match === null ? 'does not match' : 'matches'} the pattern, as required.`
        : `The text ${match === null ? 'does not match' : 'matches'} the pattern ${rule.source}${not ? ', which it must not' : ''}.`,
      data: { matched: match?.[0] ?? null },
    };
  },
});
