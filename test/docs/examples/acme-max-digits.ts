import * as v from 'valibot';
import type { GatewayPlugin } from '../../../core/index.js';
import { defineCheck } from '../../../plugins/guardrails/index.js';

/** Built once, at import: never build a regex per request. */
const DIGIT = /\p{Nd}/gu;

/**
 * `acme.maxDigits { max }`: passes when the checked text holds at most `max`
 * digits. Useful to keep account numbers out of prompts.
 */
export const maxDigits = defineCheck({
  parameters: v.strictObject({
    max: v.pipe(v.number('max must be a number'), v.integer('max must be a whole number'), v.minValue(0, 'max must be 0 or more')),
  }),
  run({ max }, { text }) {
    const digits = text.match(DIGIT)?.length ?? 0;
    const verdict = digits <= max;
    return {
      verdict,
      explanation: verdict ? `${digits} digits, at most ${max} allowed.` : `The text holds ${digits} digits; at most ${max} are allowed.`,
      data: { digits },
    };
  },
});

/** The plugin: registers the check under its id. Load it before `guardrails()`. */
export function acmeChecks(): GatewayPlugin {
  return {
    name: 'acme-checks',
    apply(api) {
      api.checks.add('acme.maxDigits', maxDigits);
    },
  };
}
