import * as v from 'valibot';
import { compilePattern, defineCheck } from '../../../sdk/index.js';

/**
 * `default.regexMatch { rule, not? }`: passes when the text matches `rule`
 * (an RE2 pattern: linear-time matching, no backreferences or lookaround;
 * flags inline, e.g. `(?i)`), or does not when `not` is set. The pattern is
 * compiled once, when the config is first seen; one RE2 refuses, or one
 * over the length and size limits, is a 400 naming the parameter.
 */
export const regexMatch = defineCheck({
  parameters: v.strictObject({
    rule: v.pipe(
      v.string('rule must be a string'),
      v.minLength(1, 'rule must not be empty'),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        try {
          return compilePattern(dataset.value);
        } catch (err) {
          addIssue({ message: `rule ${(err as Error).message}` });
          return NEVER;
        }
      }),
    ),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  // Only `not` can fail on part of the text: a match in the window is final.
  stream: (p) => (p.not ? { scope: 'window' } : null),
  run({ rule, not }, { text }) {
    const match = rule.match(text);
    const verdict = not ? match === null : match !== null;
    return {
      verdict,
      explanation: verdict
        ? `The text ${match === null ? 'does not match' : 'matches'} the pattern, as required.`
        : `The text ${match === null ? 'does not match' : 'matches'} the pattern ${rule.source}${not ? ', which it must not' : ''}.`,
      data: { matched: match },
    };
  },
});
