import * as v from 'valibot';
import {
  addShapedRoutes,
  asksStreamUsage,
  effectiveBody,
  type GatewayPlugin,
  jsonAnswer,
  openAIMediaRoute,
  OPENAI_ROUTES,
  openAIFormatResponse,
  type OpenAIRouteName,
  parseOptions,
  type Provider,
  type ProviderRoute,
  readJson,
  readText,
  requestBody,
  type RequestContext,
  streamAnswer,
  streamUsageBody,
  streamUsageResponse,
  type Target,
  toGatewayUsage,
  type UpstreamResponse,
  wantsUsage,
  withStreamUsage,
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
  /**
   * Per provider name, whether to ask it for a stream's usage on the client's behalf (`ask`) or not
   * (`off`), replacing the row's `streamUsage` (e.g. `{ "vllm": "ask" }` for a vLLM that takes
   * `stream_options.include_usage`).
   */
  streamUsage: v.optional(v.record(v.string(), v.picklist(['ask', 'off']))),
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
  for (const name of Object.keys(opts.streamUsage ?? {})) {
    if (!known.has(name) && !extra.some((r) => r.name === name)) {
      throw new Error(`Invalid options for ${PLUGIN_NAME}: streamUsage: unknown provider "${name}" (bundled: ${[...known].join(', ')})`);
    }
  }
  const rows = [...COMPATIBLE_PROVIDERS.filter((r) => opts.only === undefined || opts.only.includes(r.name)), ...extra].map((r) => {
    let row = opts.baseURLs?.[r.name] === undefined ? r : { ...r, baseURL: opts.baseURLs[r.name]! };
    const usage = opts.streamUsage?.[r.name];
    if (usage !== undefined) {
      row = { ...row };
      if (usage === 'ask') row.streamUsage = 'ask';
      else delete row.streamUsage;
    }
    return row;
  });
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
    // Chat and completions streams report usage only when asked: a row that takes the option is asked on the client's behalf.
    const usage = row.streamUsage === 'ask' && (name === 'chat.completions' || name === 'completions');
    const route: ProviderRoute = {
      path: OPENAI_ROUTES[name as OpenAIRouteName].path,
      response: (up, ctx, target) => answer(row, translates, usage && asksStreamUsage(ctx, target), up, ctx),
    };
    if (adjusts && name === 'chat.completions') {
      route.body = (ctx, target) => {
        const out = adjustRequest(row, effectiveBody(ctx, target) ?? {});
        if (usage && asksStreamUsage(ctx, target)) out.stream_options = withStreamUsage(out.stream_options);
        return JSON.stringify(out);
      };
    } else if (usage) {
      route.body = (ctx, target) => streamUsageBody(ctx, target) ?? requestBody(ctx, target) ?? '';
    }
    routes[name] = route;
  }
  // Images and audio where the provider offers them in OpenAI's own shape (the `media` plugin's routes).
  for (const name of row.media ?? []) routes[name] = openAIMediaRoute(name);
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

/** `askedUsage`: the gateway asked this attempt for the stream's usage on the client's behalf (kept from the client). */
async function answer(row: CompatibleProvider, translates: boolean, askedUsage: boolean, upstream: UpstreamResponse, ctx: RequestContext) {
  if (upstream.status < 200 || upstream.status >= 300) return compatibleError(row, upstream, await readText(upstream.body));
  if (!translates) return askedUsage ? streamUsageResponse(upstream, ctx, true) : openAIFormatResponse(upstream, ctx);
  const type = upstream.headers['content-type'];
  if (typeof type === 'string' && type.startsWith('text/event-stream')) return streamAnswer(upstream, compatibleStream(row, ctx, wantsUsage(ctx), askedUsage));
  const json = (await readJson(upstream)) as Record<string, any>;
  normalizePayload(json, row.quirks);
  if (json.usage) ctx.usage = toGatewayUsage(json.usage);
  return jsonAnswer(upstream, upstream.status, json);
}

export default openaiCompatible;
