// @ts-check
/**
 * An example plugin package for switchyard-gateway, loaded by name from a server
 * config, without a rebuild of the gateway:
 *
 *   { "name": "acme-gateway-plugin", "options": { "defaultRegion": "eu" } },
 *   { "name": "acme-gateway-plugin", "export": "acmeChecks" }
 *
 * It imports nothing but the gateway's SDK (a peer dependency: the one the
 * gateway itself runs) and Node's own modules.
 */
import { createHmac } from 'node:crypto';
import { addShapedRoutes, defineCheck, fieldSchema, openAIFormatResponse, parseOptions, v } from 'switchyard-gateway/sdk';

/** The plugin API this package was written for; the gateway refuses to start with another major version. */
const GATEWAY_API = '^2.0.0';
const REGIONS = /** @type {const} */ (['eu', 'us']);

const ProviderOptions = v.strictObject({
  /** Where the Acme server listens; `{region}` becomes the target's region. */
  baseURL: v.optional(v.pipe(v.string(), v.url('baseURL must be a URL')), 'https://{region}.api.acme.example/v1'),
  /** Region of targets that name none. */
  defaultRegion: v.optional(v.picklist(REGIONS, 'defaultRegion must be eu or us'), 'eu'),
});

/**
 * The `acme` provider: an OpenAI-format server in two regions that wants each
 * request signed with its key. Owns the config field `acme_region`.
 *
 * @param {v.InferInput<typeof ProviderOptions>} [options]
 * @returns {import('switchyard-gateway/sdk').GatewayPlugin}
 */
export default function acme(options = {}) {
  const opts = parseOptions('acme', ProviderOptions, options);
  /** @param {import('switchyard-gateway/sdk').Target} target */
  const region = (target) => /** @type {string | undefined} */ (target.acme_region) ?? opts.defaultRegion;
  /** @type {import('switchyard-gateway/sdk').Provider} */
  const provider = {
    name: 'acme',
    baseURL: (target) => (typeof target.custom_host === 'string' ? target.custom_host : opts.baseURL.replace('{region}', region(target))),
    authHeaders: (target) => ({ authorization: `Bearer ${target.api_key ?? ''}`, 'x-acme-region': region(target) }),
    // Once per attempt, on the request as built: a retry signs again.
    async prepare(request, target) {
      request.headers['x-acme-signature'] = createHmac('sha256', String(target.api_key ?? '')).update(request.body ?? '').digest('hex');
    },
    routes: { 'chat.completions': { path: '/chat/completions', response: openAIFormatResponse } },
  };
  return {
    name: 'acme',
    gatewayApi: GATEWAY_API,
    targetFields: { acme_region: { schema: fieldSchema.oneOf(REGIONS), inherit: 'same-provider' } },
    state: [], // keeps nothing between requests (docs/security.md, "Declaring state")
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add('acme', provider);
    },
  };
}

const DIGIT = /\p{Nd}/gu;

/** `acme.maxDigits { max }`: passes when the checked text holds at most `max` digits; a denial answers `acme_too_many_digits`. */
export const maxDigits = defineCheck({
  parameters: v.strictObject(
    { max: v.pipe(v.number('max must be a number'), v.integer('max must be a whole number'), v.minValue(0, 'max must be 0 or more')) },
    'the parameters must be { max }, with max a whole number', // also the message when max is missing
  ),
  denyCode: 'acme_too_many_digits',
  run({ max }, { text }) {
    const digits = text.match(DIGIT)?.length ?? 0;
    return { verdict: digits <= max, explanation: `The text holds ${digits} digits; at most ${max} are allowed.`, data: { digits } };
  },
});

/**
 * The check plugin: declares the error code its denials answer with (446, as
 * every denial) and registers `acme.maxDigits`. Anywhere in the list: checks are looked up by id when a request runs them.
 *
 * @returns {import('switchyard-gateway/sdk').GatewayPlugin}
 */
export function acmeChecks() {
  return {
    name: 'acme-checks',
    gatewayApi: GATEWAY_API,
    errorCodes: { acme_too_many_digits: { status: 446, type: 'guardrail_error' } },
    state: [], // keeps nothing between requests (docs/security.md, "Declaring state")
    apply(api) {
      api.checks.add('acme.maxDigits', maxDigits);
    },
  };
}
