import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { parameters } from './params.js';

/**
 * `default.modelWhitelist { models, not? }`: passes when the request's model
 * is one of `models` (exact, case-sensitive names); with `not`, when it is
 * none of them (a block list). A request without a model fails (passes with
 * `not`). Meant for the input phase, where it stops a request before any
 * provider sees it; on the output phase it checks the same requested model.
 */
export const modelWhitelist = defineCheck({
  parameters: v.pipe(
    parameters({
      models: v.pipe(
        v.array(v.pipe(v.string('each model must be a string'), v.minLength(1, 'a model name must not be empty')), 'models must be an array of model names'),
        v.minLength(1, 'models must not be empty'),
      ),
      not: v.optional(v.boolean('not must be true or false'), false),
    }),
    v.transform((p) => ({ ...p, set: new Set(p.models) })),
  ),
  run({ set, not }, { model }) {
    const listed = model !== null && set.has(model);
    const verdict = not ? !listed : listed;
    let explanation: string;
    if (model === null) explanation = verdict ? 'The request names no model, and none is blocked.' : 'The request names no model, so it is not allowed.';
    else if (verdict) explanation = `The model "${model}" is ${listed ? 'allowed' : 'not blocked'}.`;
    else explanation = not ? `The model "${model}" is blocked.` : `The model "${model}" is not in the allowed list.`;
    return {
      verdict,
      explanation,
      data: { model, listed },
    };
  },
});
