import * as v from 'valibot';
import {
  addShapedRoutes,
  effectiveBody,
  type GatewayPlugin,
  jsonAnswer,
  OPENAI_ROUTES,
  openAIFormatResponse,
  type OpenAIRouteName,
  parseOptions,
  type Provider,
  type ProviderRoute,
  readJson,
  readText,
  type RequestContext,
  streamAnswer,
  type Target,
  toGatewayUsage,
  type UpstreamResponse,
  wantsUsage,
} from '../../../sdk/index.js';
import { adjustRequest, compatibleError, compatibleStream, normalizePayload } from './normalize.js';
import { COMPATIBLE_PROVIDERS, type CompatibleProvider } from './table.js';

export const PLUGIN_NAME = 'openai-compatible';
export { COMPATIBLE_PROVIDERS, type CompatibleProvider } from './table.js';

const OptionsSchema = v.strictObject({
  /** Names of the bundled rows to register; default all. */
  only: v.optional(v.array(v.string())),
  /** Base URL per provider name, replacing the row's default (e.g. an Ollama on another host). */
  baseURLs: v.optional(v.record(v.string(), v.pipe(v.string(), v.url()))),
});

export type OpenAICompatibleOptions = v.InferInput<typeof OptionsSchema> & {
  /** Extra rows, for providers not bundled. */
  extra?: readonly CompatibleProvider[];
};

/**
 * The OpenAI-compatible family: one provider per row of the table, each
 * speaking the OpenAI wire format with its own base URL and quirks. Rows
 * without response quirks pass answers through byte for byte; the others are
 * normalised (finish reasons, usage fields, error shapes).
 */
export function openaiCompatible(options: OpenAICompatibleOptions = {}): GatewayPlugin {
  const { extra = [], ...rest } = options;
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, rest);
  const known = new Set(COMPATIBLE_PROVIDERS.map((r) => r.name));
  for (const name of opts.only ?? []) {
    if (!known.has(name)) throw new Error(`Invalid options for ${PLUGIN_NAME}: only: unknown provider "${name}" (bundled: ${[...known].join(', ')})`);
  }
  const rows = [...COMPATIBLE_PROVIDERS.filter((r) => opts.only === undefined || opts.only.includes(r.name)), ...extra].map((r) =>
    opts.baseURLs?.[r.name] === undefined ? r : { ...r, baseURL: opts.baseURLs[r.name]! },
  );
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      for (const row of rows) {
        addShapedRoutes(api, row.routes);
        api.providers.add(row.name, compatibleProvider(row));
      }
    },
  };
}

/** The provider adapter for one row. */
export function compatibleProvider(row: CompatibleProvider): Provider {
  const quirks = row.quirks;
  const translates = quirks?.finishReasons !== undefined || quirks?.usage !== undefined;
  const adjusts = quirks?.dropFields !== undefined || quirks?.singleChoice === true || quirks?.nineCharToolIds === true || quirks?.dropMessageNames === true;
  const routes: Partial<Record<string, ProviderRoute>> = {};
  for (const name of row.routes) {
    const route: ProviderRoute = { path: OPENAI_ROUTES[name as OpenAIRouteName].path, response: (up, ctx) => answer(row, translates, up, ctx) };
    if (adjusts && name === 'chat.completions') route.body = (ctx, target) => JSON.stringify(adjustRequest(row, effectiveBody(ctx, target) ?? {}));
    routes[name] = route;
  }
  return {
    name: row.name,
    baseURL: row.baseURL.replace(/\/$/, ''),
    authHeaders(target: Target) {
      const headers: Record<string, string> = {};
      if (typeof target.api_key === 'string' && target.api_key !== '') headers.authorization = `Bearer ${target.api_key}`;
      return headers;
    },
    routes,
    ...(row.resources === undefined ? {} : { resources: { ...row.resources } }),
  };
}

async function answer(row: CompatibleProvider, translates: boolean, upstream: UpstreamResponse, ctx: RequestContext) {
  if (upstream.status < 200 || upstream.status >= 300) return compatibleError(row, upstream, await readText(upstream.body));
  if (!translates) return openAIFormatResponse(upstream, ctx);
  const type = upstream.headers['content-type'];
  if (typeof type === 'string' && type.startsWith('text/event-stream')) return streamAnswer(upstream, compatibleStream(row, ctx, wantsUsage(ctx)));
  const json = (await readJson(upstream)) as Record<string, any>;
  normalizePayload(json, row.quirks);
  if (json.usage) ctx.usage = toGatewayUsage(json.usage);
  return jsonAnswer(upstream, upstream.status, json);
}

export default openaiCompatible;
