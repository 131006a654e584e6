import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { parameters } from './params.js';

const routeList = (name: string) =>
  v.optional(
    v.pipe(
      v.array(v.pipe(v.string(`each item of ${name} must be a route name`), v.minLength(1, `a route name in ${name} must not be empty`)), `${name} must be an array of route names`),
      v.minLength(1, `${name} must not be empty`),
    ),
  );

/**
 * `default.allowedRequestTypes { allowed? , blocked? }`: the request's route
 * name (`chat.completions`, `completions`, `embeddings`, `proxy`, …) must be
 * in `allowed`, or must not be in `blocked`. Exactly one of the two lists is
 * given.
 */
export const allowedRequestTypes = defineCheck({
  parameters: v.pipe(
    parameters({ allowed: routeList('allowed'), blocked: routeList('blocked') }),
    v.check((p) => (p.allowed === undefined) !== (p.blocked === undefined), 'give exactly one of allowed and blocked'),
    v.transform((p) => (p.allowed !== undefined ? { allow: true, routes: new Set(p.allowed) } : { allow: false, routes: new Set(p.blocked) })),
  ),
  run({ allow, routes }, { route }) {
    const listed = routes.has(route);
    const verdict = allow ? listed : !listed;
    return {
      verdict,
      explanation: verdict
        ? `Requests of type "${route}" are allowed.`
        : allow
          ? `Requests of type "${route}" are not in the allowed list (${[...routes].join(', ')}).`
          : `Requests of type "${route}" are blocked.`,
      data: { route },
    };
  },
});
