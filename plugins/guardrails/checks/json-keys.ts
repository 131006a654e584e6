import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { jsonInText } from './fences.js';
import { parameters } from './params.js';

/**
 * `default.jsonKeys { keys, operator }`: looks at the top-level keys of the
 * JSON object in the text (the whole text or a ```json fenced block). `any`
 * passes when at least one key is present, `all` when every key is, `none`
 * when no key is. A text that holds no JSON object fails whatever the operator.
 */
export const jsonKeys = defineCheck({
  parameters: parameters({
    keys: v.pipe(v.array(v.string('each key must be a string'), 'keys must be an array of strings'), v.minLength(1, 'keys must not be empty')),
    operator: v.optional(v.picklist(['any', 'all', 'none'], 'operator must be any, all or none'), 'any'),
  }),
  run({ keys, operator }, { text }) {
    const json = jsonInText(text);
    if (!json.found || typeof json.value !== 'object' || json.value === null || Array.isArray(json.value)) {
      return { verdict: false, explanation: 'The text holds no JSON object.', data: { found: [] } };
    }
    const present = new Set(Object.keys(json.value));
    const found = keys.filter((k) => present.has(k));
    const verdict = operator === 'any' ? found.length > 0 : operator === 'all' ? found.length === keys.length : found.length === 0;
    const explanation = verdict
      ? `The JSON's keys satisfy "${operator}" for the listed keys.`
      : operator === 'none'
        ? `The JSON has keys it must not: ${found.join(', ')}.`
        : operator === 'all'
          ? `The JSON lacks the keys: ${keys.filter((k) => !present.has(k)).join(', ')}.`
          : 'The JSON has none of the listed keys.';
    return { verdict, explanation, data: { found } };
  },
});
