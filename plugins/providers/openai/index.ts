import {
  addShapedRoutes,
  asksStreamUsage,
  fieldSchema as f,
  MEDIA_ROUTE_NAMES,
  openAIMediaRoute,
  openAIFormatResponse,
  parseOptions,
  requestBody,
  streamUsageBody,
  streamUsageResponse,
  type GatewayPlugin,
  type Provider,
  type ProviderRoute,
  type Target,
  type TargetField,
} from '../../../sdk/index.js';
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
 * A route whose streams report usage only when asked (chat, completions): a stream the client asked no
 * usage for is sent with `stream_options.include_usage: true`, and its usage event is kept from the
 * client (sdk/openai/stream-usage.ts); every other request and answer passes through unchanged.
 */
function usageRoute(path: string): ProviderRoute {
  return {
    path,
    body: (ctx, target) => streamUsageBody(ctx, target) ?? requestBody(ctx, target) ?? '',
    response: (upstream, ctx, target) => streamUsageResponse(upstream, ctx, asksStreamUsage(ctx, target)),
  };
}

/**
 * The `openai` provider: chat completions (JSON and SSE), completions,
 * embeddings and the Responses API, passed through unchanged, plus
 * credentials for the generic proxy. A chat or completions stream whose client
 * asked no usage is sent with `stream_options.include_usage` (the answer's
 * usage event recorded, not passed on), so its tokens are counted by OpenAI.
 * `apiKey`, `organization` and `project` are defaults for requests whose target sets none.
 */
export function openai(options: OpenAIOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OpenAIOptionsSchema, options);
  const provider: Provider = {
    name: PLUGIN_NAME,
    // Its answers name the service tier that served them (`flex`, `priority`), which sets the price (docs/cost.md).
    servesTiers: true,
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
      'chat.completions': opts.streamUsage === 'ask' ? usageRoute('/chat/completions') : { path: '/chat/completions', response: openAIFormatResponse },
      completions: opts.streamUsage === 'ask' ? usageRoute('/completions') : { path: '/completions', response: openAIFormatResponse },
      embeddings: { path: '/embeddings', response: openAIFormatResponse },
      // The Responses API, native: the request and answer pass through (the `responses` front door serves the route).
      responses: { path: '/responses', response: openAIFormatResponse },
      // Images, audio and moderations (the `media` plugin's routes), as OpenAI defines them.
      ...Object.fromEntries(MEDIA_ROUTE_NAMES.map((name) => [name, openAIMediaRoute(name)])),
    },
    // Files, batches and fine-tuning jobs at the same base URL, in OpenAI's own format (docs/batches.md).
    resources: { files: 'openai', batches: 'openai', fineTuning: 'openai', realtime: 'openai' },
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
