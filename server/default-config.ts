import type { ServerConfig } from './schema.js';

/**
 * What `npm start` runs without a config file: every bundled plugin, with
 * embedded defaults (static keys from GATEWAY_API_KEYS, the control plane and
 * the durable request log in an SQLite file in the data dir, in-memory state
 * otherwise). Every request is logged and `/metrics` is served; the log's
 * writes run on a worker thread (docs/logs.md, docs/performance.md). The
 * `redis` store is left out: it needs REDIS_URL, and the breaker then
 * needs `{ "store": "redis" }`.
 */
export const DEFAULT_CONFIG: ServerConfig = {
  port: 8787,
  plugins: [
    { name: 'trace' },
    { name: 'traceparent' },
    { name: 'health' },
    { name: 'auth-static' },
    { name: 'sqlite' },
    { name: 'control-plane' },
    { name: 'config' },
    { name: 'provider-headers' },
    { name: 'provider-registry' },
    { name: 'validation' },
    { name: 'guardrail-checks' },
    { name: 'guardrails' },
    { name: 'cache-memory' },
    { name: 'cache' },
    { name: 'cache-simple' },
    { name: 'strategy-single' },
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
    { name: 'responses' },
    { name: 'messages' },
    { name: 'proxy' },
    { name: 'log-store' },
    { name: 'log-api' },
    { name: 'metrics' },
    // Off (no tap, nothing loaded) unless OTEL_EXPORTER_OTLP_ENDPOINT or a per-signal endpoint is set.
    { name: 'otel' },
    { name: 'request-log' },
  ],
};
