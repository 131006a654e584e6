import * as v from 'valibot';
import { defineCheck, type GatewayPlugin } from 'switchyard-gateway/sdk';

const DIGIT = /\p{Nd}/gu; // built once, at import: never build a regex per request

/** `acme.maxDigits { max }`: passes when the checked text holds at most `max` digits. */
export const maxDigits = defineCheck({
  parameters: v.strictObject(
    { max: v.pipe(v.number('max must be a number'), v.integer('max must be a whole number'), v.minValue(0, 'max must be 0 or more')) },
    'the parameters must be { max }, with max a whole number', // also the message when max is missing
  ),
  denyCode: 'acme_too_many_digits', // a denial by this check answers with this code instead of guardrail_denied
  // Digits only add up: once part of a streamed answer has too many, the whole has too; judge it as it arrives.
  stream: () => ({ scope: 'all' }),
  run({ max }, { text }) {
    const digits = text.match(DIGIT)?.length ?? 0;
    return { verdict: digits <= max, explanation: `The text holds ${digits} digits; at most ${max} are allowed.`, data: { digits } };
  },
});

/** The plugin: declares the error code (a denial is a 446) and registers the check under its id. */
export function acmeChecks(): GatewayPlugin {
  return {
    name: 'acme-checks',
    errorCodes: { acme_too_many_digits: { status: 446, type: 'guardrail_error' } },
    apply(api) {
      api.checks.add('acme.maxDigits', maxDigits);
    },
  };
}
