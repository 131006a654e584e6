import { createHmac } from 'node:crypto';
import * as v from 'valibot';
import { addShapedRoutes, fieldSchema, openAIFormatResponse, parseOptions, type GatewayPlugin, type Provider, type Target } from 'switchyard-gateway/sdk';

const REGIONS = ['eu', 'us'] as const;

const OptionsSchema = v.strictObject({
  /** Where the Acme server listens; `{region}` becomes the target's region. */
  baseURL: v.optional(v.pipe(v.string(), v.url('baseURL must be a URL')), 'https://{region}.api.acme.example/v1'),
  /** Region of targets that name none. */
  defaultRegion: v.optional(v.picklist(REGIONS, 'defaultRegion must be eu or us'), 'eu'),
});

/**
 * `acme`: a server that speaks the OpenAI wire format, in two regions, and
 * wants each request signed with the key. Requests pass through unchanged;
 * answers (JSON or SSE) come back byte for byte, with `usage` read on the way.
 */
export function acmeProvider(options: v.InferInput<typeof OptionsSchema> = {}): GatewayPlugin {
  const opts = parseOptions('acme', OptionsSchema, options);
  const region = (target: Target) => (target.acme_region as string | undefined) ?? opts.defaultRegion;
  const provider: Provider = {
    name: 'acme',
    // A function of the target: `custom_host` wins, else the region's host.
    baseURL: (target) => (typeof target.custom_host === 'string' ? target.custom_host : opts.baseURL.replace('{region}', region(target))),
    authHeaders: (target) => ({ authorization: `Bearer ${target.api_key ?? ''}`, 'x-acme-region': region(target) }),
    // Once per attempt, after the request is built and before it is sent (a retry signs again).
    async prepare(request, target) {
      const body = request.body ?? '';
      request.headers['x-acme-signature'] = createHmac('sha256', String(target.api_key ?? '')).update(body).digest('hex');
    },
    routes: {
      'chat.completions': { path: '/chat/completions', response: openAIFormatResponse },
    },
  };
  return {
    name: 'acme',
    gatewayApi: '^2.0.0',
    // A config may now say `"acme_region": "us"`; any other value is a 400 naming the field.
    targetFields: { acme_region: { schema: fieldSchema.oneOf(REGIONS), inherit: 'same-provider' } },
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add('acme', provider);
    },
  };
}
