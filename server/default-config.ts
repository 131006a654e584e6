import type { ServerEnv } from './env.js';
import type { PluginEntry, ServerConfig } from './schema.js';

/**
 * What `npm start` runs without a config file and without REDIS_URL or
 * DATABASE_URL: every bundled plugin, with embedded defaults (static keys
 * from GATEWAY_API_KEYS, the control plane and the durable request log in an
 * SQLite file in the data dir, in-memory state otherwise). Every request is
 * logged and `/metrics` is served; the log's writes run on a worker thread
 * (docs/logs.md, docs/performance.md). See {@link defaultConfig} for what the
 * two variables change.
 */
export const DEFAULT_CONFIG: ServerConfig = {
  port: 8787,
  plugins: [
    { name: 'trace' },
    { name: 'traceparent' },
    { name: 'health' },
    // The OpenAPI document of every route (/v1/openapi.json) and its viewer (/docs).
    { name: 'openapi' },
    { name: 'auth-static' },
    { name: 'sqlite' },
    { name: 'control-plane' },
    { name: 'scim' },
    { name: 'sso' },
    { name: 'config' },
    { name: 'prompts' },
    { name: 'provider-headers' },
    { name: 'provider-registry' },
    { name: 'validation' },
    { name: 'guardrail-checks' },
    { name: 'guardrails' },
    { name: 'limits' },
    { name: 'cache-memory' },
    { name: 'cache' },
    { name: 'cache-simple' },
    // Costs nothing until a config asks for `semantic`; then it embeds with the request's own target (docs/caching.md).
    { name: 'cache-semantic' },
    { name: 'strategy-single' },
    // Routing that knows the providers' state (rate-limit headroom, latency, affinity) and the request's deadline.
    { name: 'routing' },
    { name: 'strategy-loadbalance' },
    { name: 'strategy-fallback' },
    { name: 'strategy-conditional' },
    { name: 'retry' },
    { name: 'breaker' },
    { name: 'timeout' },
    { name: 'openai' },
    { name: 'openai-compatible' },
    { name: 'anthropic' },
    { name: 'google' },
    { name: 'vertex-ai' },
    { name: 'bedrock' },
    { name: 'azure-openai' },
    { name: 'azure-ai' },
    { name: 'cohere' },
    { name: 'rerank' },
    // Images, audio and moderations (POST /v1/images/…, /v1/audio/…, /v1/moderations), served by the providers that have them.
    { name: 'media' },
    // The Realtime API over WebSocket (GET /v1/realtime) and the client secrets browsers connect with.
    { name: 'realtime' },
    { name: 'responses' },
    { name: 'messages' },
    // MCP servers and agents registered in the control plane, served at /v1/mcp/{id} and /v1/a2a/{id}.
    { name: 'mcp' },
    { name: 'a2a' },
    // The web dashboard at /dashboard (built by `npm run build`; signs in with an API key or single sign-on).
    { name: 'dashboard' },
    { name: 'proxy' },
    { name: 'log-store' },
    { name: 'log-api' },
    { name: 'metrics' },
    // Off (no tap, nothing loaded) unless OTEL_EXPORTER_OTLP_ENDPOINT or a per-signal endpoint is set.
    { name: 'otel' },
    { name: 'request-log' },
    // Last, so they close first: batch lines still in flight at shutdown finish (and are logged) before the stores close.
    { name: 'batches' },
    { name: 'fine-tuning' },
  ],
};

/**
 * The default config for an environment: going multi-instance takes two
 * variables and no file (docs/operations.md).
 * - `REDIS_URL`: the `redis` store plugin is loaded first, and the limit
 *   counters, the circuit breaker state, the routing state and the response cache live in Redis
 *   (`cache-redis` replaces `cache-memory`).
 * - `DATABASE_URL`: `postgres` replaces `sqlite`, so the control plane (keys,
 *   workspaces, policies, …) and the log store live in PostgreSQL.
 * With neither, it is {@link DEFAULT_CONFIG} itself.
 */
export function defaultConfig(env: Pick<ServerEnv, 'redisUrl' | 'databaseUrl'>): ServerConfig {
  const redis = env.redisUrl !== undefined;
  const postgres = env.databaseUrl !== undefined;
  if (!redis && !postgres) return DEFAULT_CONFIG;
  const plugins: PluginEntry[] = [];
  for (const p of DEFAULT_CONFIG.plugins) {
    if (redis && p.name === 'trace') plugins.push({ name: 'redis' });
    if (postgres && p.name === 'sqlite') plugins.push({ name: 'postgres' });
    else if (redis && p.name === 'cache-memory') plugins.push({ name: 'cache-redis' });
    else if (redis && (p.name === 'cache' || p.name === 'breaker' || p.name === 'limits' || p.name === 'routing')) plugins.push({ name: p.name, options: { ...p.options, store: 'redis' } });
    else plugins.push(p);
  }
  return { ...DEFAULT_CONFIG, plugins };
}
