import { join } from 'node:path';
import type { GatewayPlugin } from '../core/index.js';
import type { ServerEnv } from './env.js';
import { isPathLike, loadExternalPlugin, type PluginOrigin } from './load-plugin.js';
import type { ServerConfig } from './schema.js';

type Options = Record<string, unknown> | undefined;
type Loader = (options: Options, env: ServerEnv, server: ServerConfig) => Promise<GatewayPlugin>;

/**
 * Bundled plugins by name, loaded lazily so a config pulls in only what it
 * names. Environment-derived defaults are applied here, in one place.
 */
export const CATALOG: Readonly<Record<string, Loader>> = Object.freeze({
  trace: async () => (await import('../plugins/trace/index.js')).trace(),
  health: async () => (await import('../plugins/health/index.js')).health(),
  openapi: async (options) => (await import('../plugins/openapi/index.js')).openapi(options),
  'auth-static': async (options, env) => {
    const { staticAuth } = await import('../plugins/auth-static/index.js');
    const keys = (options?.keys as string[] | undefined) ?? env.apiKeys;
    return staticAuth({ ...options, keys });
  },
  'provider-headers': async (options) => (await import('../plugins/provider-headers/index.js')).providerHeaders(options),
  validation: async () => (await import('../plugins/validation/index.js')).validation(),
  proxy: async () => (await import('../plugins/proxy/index.js')).proxy(),
  'request-log': async (options, env) =>
    (await import('../plugins/request-log/index.js')).requestLog(env.requestLog === undefined ? options : { lines: env.requestLog, ...options }),
  openai: async (options) => (await import('../plugins/providers/openai/index.js')).openai(options),
  'provider-registry': async (options, env, server) =>
    (await import('../plugins/provider-registry/index.js')).providerRegistry({ providers: server.providers, dataDir: env.dataDir, ...movedFromControlPlane(server), ...options }),
  google: async (options) => (await import('../plugins/providers/google/index.js')).google(options),
  'vertex-ai': async (options) => (await import('../plugins/providers/vertex-ai/index.js')).vertexAI(options),
  bedrock: async (options) => (await import('../plugins/providers/bedrock/index.js')).bedrock(options),
  'azure-openai': async (options) => (await import('../plugins/providers/azure/openai/index.js')).azureOpenAI(options),
  'azure-ai': async (options) => (await import('../plugins/providers/azure/ai/index.js')).azureAI(options),
  cohere: async (options) => (await import('../plugins/providers/cohere/index.js')).cohere(options),
  rerank: async (options) => (await import('../plugins/rerank/index.js')).rerank(options),
  media: async (options) => (await import('../plugins/media/index.js')).media(options),
  realtime: async (options, env) => (await import('../plugins/realtime/index.js')).realtime({ dataDir: env.dataDir, encryptionKey: env.encryptionKey, ...options }),
  responses: async (options) => (await import('../plugins/responses/index.js')).responsesDoor(options),
  messages: async (options) => (await import('../plugins/messages/index.js')).messagesDoor(options),
  anthropic: async (options) => (await import('../plugins/providers/anthropic/index.js')).anthropic(options),
  'openai-compatible': async (options) => (await import('../plugins/providers/openai-compatible/index.js')).openaiCompatible(options),
  config: async (options, _env, server) =>
    (await import('../plugins/config/index.js')).config({ configs: server.configs, default: server.defaultConfig, ...options }),
  prompts: async (options) => (await import('../plugins/prompts/index.js')).prompts(options),
  'strategy-single': async () => (await import('../plugins/strategies/single/index.js')).singleStrategy(),
  'strategy-loadbalance': async () => (await import('../plugins/strategies/loadbalance/index.js')).loadbalanceStrategy(),
  'strategy-fallback': async () => (await import('../plugins/strategies/fallback/index.js')).fallbackStrategy(),
  'strategy-conditional': async () => (await import('../plugins/strategies/conditional/index.js')).conditionalStrategy(),
  guardrails: async (options, _env, server) =>
    (await import('../plugins/guardrails/index.js')).guardrails({ guardrails: server.guardrails, ...options }),
  'guardrail-checks': async () => (await import('../plugins/guardrails/checks/index.js')).guardrailChecks(),
  cache: async (options) => (await import('../plugins/cache/index.js')).cache(options),
  'cache-simple': async (options) => (await import('../plugins/cache/simple/index.js')).cacheSimple(options),
  'cache-semantic': async (options) => {
    const { cacheSemantic } = await import('../plugins/cache/semantic/index.js');
    return cacheSemantic(options as Parameters<typeof cacheSemantic>[0]);
  },
  'cache-memory': async (options) => (await import('../plugins/cache/stores/memory/index.js')).cacheMemory(options),
  'cache-redis': async (options) => (await import('../plugins/cache/stores/redis/index.js')).cacheRedis(options),
  'log-store': async (options, _env, server) =>
    (await import('../plugins/logs/index.js')).logStore({ defaultConfigId: typeof server.defaultConfig === 'string' ? server.defaultConfig : undefined, ...options }),
  'log-api': async (options) => (await import('../plugins/logs/routes/index.js')).logApi(options),
  dashboard: async (options) => (await import('../plugins/dashboard/index.js')).dashboard(options),
  pricing: async (options) => (await import('../plugins/pricing/index.js')).pricing(options),
  metrics: async (options, env) => (await import('../plugins/metrics/index.js')).metrics({ token: env.metricsToken, ...options }),
  traceparent: async (options) => (await import('../plugins/traceparent/index.js')).traceparent(options),
  otel: async (options, env) => (await import('../plugins/otel/index.js')).otel({ env: env.otel ?? {}, ...options }),
  retry: async (options) => (await import('../plugins/retry/index.js')).retry(options),
  timeout: async () => (await import('../plugins/timeout/index.js')).timeout(),
  breaker: async (options) => (await import('../plugins/breaker/index.js')).breaker(options),
  routing: async (options) => (await import('../plugins/routing/index.js')).routing(options),
  sqlite: async (options, env) => (await import('../plugins/stores/sqlite/index.js')).sqliteStore({ dataDir: env.dataDir, ...options }),
  postgres: async (options, env) =>
    (await import('../plugins/stores/postgres/index.js')).postgresStore({
      url: env.databaseUrl ?? '',
      ...(env.databaseSchema === undefined ? {} : { schema: env.databaseSchema }),
      ...(env.databasePooler === undefined ? {} : { pooler: env.databasePooler }),
      ...(env.databaseReadUrl === undefined ? {} : { readUrl: env.databaseReadUrl }),
      ...options,
    }),
  'control-plane': async (options, env) => {
    // Moved options: secretsDir to provider-registry (movedFromControlPlane), agentCardTtlMs to a2a (movedCardTtl).
    const { secretsDir: _secrets, agentCardTtlMs: _cardTtl, ...own } = options ?? {};
    return (await import('../plugins/control-plane/index.js')).controlPlane({ dataDir: env.dataDir, encryptionKey: env.encryptionKey, bootstrapKey: env.bootstrapKey, ...own });
  },
  scim: async (options, env) =>
    (await import('../plugins/scim/index.js')).scim({ ...(env.scimToken === undefined ? {} : { token: env.scimToken }), ...options }),
  sso: async (options, env) => (await import('../plugins/sso/index.js')).sso({ ...(env.oidc ?? {}), ...options }),
  redis: async (options, env) =>
    (await import('../plugins/stores/redis/index.js')).redisStore({
      // REDIS_URL unless the config names the servers itself (a URL, a cluster's seeds or Sentinels).
      ...(options !== undefined && ('cluster' in options || 'sentinels' in options || 'url' in options) ? {} : { url: env.redisUrl ?? '' }),
      ...(env.redisPrefix === undefined ? {} : { keyPrefix: env.redisPrefix }),
      ...options,
    }),
  batches: async (options, env) =>
    (await import('../plugins/batches/index.js')).batches({
      dataDir: env.dataDir,
      encryptionKey: env.encryptionKey,
      ...(env.filesS3 === undefined ? {} : { files: { s3: env.filesS3 } }),
      ...options,
    }),
  'fine-tuning': async (options) => (await import('../plugins/fine-tuning/index.js')).fineTuning(options),
  mcp: async (options, env) => (await import('../plugins/mcp/index.js')).mcp({ ...(env.publicUrl === undefined ? {} : { publicUrl: env.publicUrl }), ...options }),
  a2a: async (options, env, server) =>
    (await import('../plugins/a2a/index.js')).a2a({ ...(env.publicUrl === undefined ? {} : { publicUrl: env.publicUrl }), ...movedCardTtl(server), ...options }),
  // The memory store's counters are kept in the data dir across restarts (a Redis store needs no file).
  limits: async (options, env) => {
    const { limits } = await import('../plugins/limits/index.js');
    return limits({ persistFile: join(env.dataDir, 'limits.json'), ...options });
  },
});

/**
 * Integrations and their secrets moved from the control plane to the provider registry: a config
 * that still sets `secretsDir` (or `dataDir`) on `control-plane` keeps reading its secrets there.
 */
function movedFromControlPlane(server: ServerConfig): { dataDir?: string; secretsDir?: string } {
  const options = server.plugins.find((p) => p.name === 'control-plane')?.options ?? {};
  const out: { dataDir?: string; secretsDir?: string } = {};
  if (typeof options.dataDir === 'string') out.dataDir = options.dataDir;
  if (typeof options.secretsDir === 'string') out.secretsDir = options.secretsDir;
  return out;
}

/**
 * `agentCardTtlMs` as the control plane's entry sets it, from before the option moved to the a2a plugin:
 * the a2a plugin's default then, so a config written for the old place keeps its meaning.
 */
function movedCardTtl(server: ServerConfig): { agentCardTtlMs?: number } {
  const value = server.plugins.find((p) => p.name === 'control-plane')?.options?.agentCardTtlMs;
  return value === undefined ? {} : { agentCardTtlMs: value as number };
}

export type { PluginOrigin } from './load-plugin.js';

/** The plugins a server config names, in its order, and where each came from (same index). */
export interface LoadedPlugins {
  plugins: GatewayPlugin[];
  origins: PluginOrigin[];
}

/**
 * Builds the plugins a server config names, in order: a bundled name from the
 * catalog, anything else (a package name or a path) imported from outside
 * (see `loadExternalPlugin`), relative to `baseDir`, the config file's folder.
 * The plugins only; {@link loadPluginsWithOrigins} also says where each came from.
 */
export async function loadPlugins(server: ServerConfig, env: ServerEnv, baseDir: string = process.cwd()): Promise<GatewayPlugin[]> {
  return (await loadPluginsWithOrigins(server, env, baseDir)).plugins;
}

/**
 * {@link loadPlugins}, with each plugin's origin beside it (for the start line):
 * `bundled`, `package` (the package's name and version, and the module file) or
 * `path` (the module file).
 */
export async function loadPluginsWithOrigins(server: ServerConfig, env: ServerEnv, baseDir: string = process.cwd()): Promise<LoadedPlugins> {
  const plugins: GatewayPlugin[] = [];
  const origins: PluginOrigin[] = [];
  for (const [index, entry] of server.plugins.entries()) {
    const load = isPathLike(entry.name) ? undefined : CATALOG[entry.name];
    if (load === undefined) {
      const external = await loadExternalPlugin(entry, index, baseDir, Object.keys(CATALOG));
      plugins.push(external.plugin);
      origins.push(external.origin);
      continue;
    }
    if (entry.export !== undefined) throw new Error(`Plugin "${entry.name}" (plugins[${index}] of the server config) is bundled; "export" applies to plugins loaded from a package or a file`);
    const plugin = await load(entry.options, env, server);
    plugins.push(plugin);
    origins.push({ name: plugin.name, entry: entry.name, origin: 'bundled' });
  }
  return { plugins, origins };
}
