import * as v from 'valibot';
import { parseOptions, type GatewayPlugin, type Provider } from '../../../core/index.js';
import { openAIFormatResponse } from '../../../plugins/providers/openai-format/response.js';
import { addShapedRoutes } from '../../../plugins/providers/openai-format/routes.js';

const OptionsSchema = v.strictObject({
  /** Where the Acme server listens, e.g. `http://127.0.0.1:9000/v1`. */
  baseURL: v.pipe(v.string(), v.url('baseURL must be a URL')),
  /** Key used when the request's target carries none. */
  apiKey: v.optional(v.string()),
});

/**
 * `acme`: a provider that speaks the OpenAI wire format, so requests pass
 * through unchanged and answers (JSON or SSE) come back byte for byte, with
 * `usage` read on the way.
 */
export function acmeProvider(options: v.InferInput<typeof OptionsSchema>): GatewayPlugin {
  const opts = parseOptions('acme', OptionsSchema, options);
  const provider: Provider = {
    name: 'acme',
    baseURL: opts.baseURL.replace(/\/$/, ''),
    authHeaders(target): Record<string, string> {
      const key = target.api_key ?? opts.apiKey;
      return key === undefined ? {} : { authorization: `Bearer ${key}` };
    },
    routes: {
      'chat.completions': { path: '/chat/completions', response: openAIFormatResponse },
    },
  };
  return {
    name: 'acme',
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add('acme', provider);
    },
  };
}
