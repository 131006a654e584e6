import { addShapedRoutes, fieldSchema as f, openAIFormatResponse, parseOptions, type GatewayPlugin, type Provider, type Target, type TargetField } from '../../../sdk/index.js';
import { OpenAIOptionsSchema, type OpenAIOptions } from './schema.js';

export const PLUGIN_NAME = 'openai';
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export type { OpenAIOptions };

/** Organization and project scoping (the spec's `vendorX_` stand-ins), sent as `OpenAI-Organization` / `OpenAI-Project`. */
export const OPENAI_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  openai_organization: { schema: f.string(), inherit: 'same-provider', aliases: ['vendorX_organization'] },
  openai_project: { schema: f.string(), inherit: 'same-provider', aliases: ['vendorX_project'] },
});

/**
 * The `openai` provider: chat completions (JSON and SSE), completions,
 * embeddings and the Responses API, passed through unchanged, plus
 * credentials for the generic proxy.
 * `apiKey`, `organization` and `project` are defaults for requests whose target sets none.
 */
export function openai(options: OpenAIOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OpenAIOptionsSchema, options);
  const provider: Provider = {
    name: PLUGIN_NAME,
    baseURL: (opts.baseURL ?? OPENAI_BASE_URL).replace(/\/$/, ''),
    authHeaders(target: Target) {
      const headers: Record<string, string> = {};
      const key = target.api_key ?? opts.apiKey;
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      const org = (target.openai_organization as string | undefined) ?? opts.organization;
      if (org !== undefined) headers['openai-organization'] = org;
      const project = (target.openai_project as string | undefined) ?? opts.project;
      if (project !== undefined) headers['openai-project'] = project;
      return headers;
    },
    routes: {
      'chat.completions': { path: '/chat/completions', response: openAIFormatResponse },
      completions: { path: '/completions', response: openAIFormatResponse },
      embeddings: { path: '/embeddings', response: openAIFormatResponse },
      // The Responses API, native: the request and answer pass through (the `responses` front door serves the route).
      responses: { path: '/responses', response: openAIFormatResponse },
    },
    // Files, batches and fine-tuning jobs at the same base URL, in OpenAI's own format (docs/batches.md).
    resources: { files: 'openai', batches: 'openai', fineTuning: 'openai' },
  };
  return {
    name: PLUGIN_NAME,
    targetFields: OPENAI_FIELDS,
    state: [],
    apply(api) {
      addShapedRoutes(api, ['chat.completions', 'completions', 'embeddings']);
      api.providers.add(PLUGIN_NAME, provider);
    },
  };
}

export default openai;
