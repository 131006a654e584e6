import type { Migration } from '../../../sdk/index.js';
import { cachedTokensMigration, rollupMigration, tokenKindsMigration } from '../analytics/rollups.js';

/** Migration namespace of the log store. */
export const LOGS_NAMESPACE = 'logs';

/**
 * The log tables, one text for both dialects (portable types only: TEXT,
 * INTEGER, BIGINT, DOUBLE PRECISION; JSON as TEXT, booleans 0/1, times as
 * epoch ms). Indexes serve the queries the log routes run (see version 2) and
 * the metadata filter (a key/value side table).
 */
export const LOG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'gateway_logs',
    up: `
CREATE TABLE gateway_logs (
  id TEXT PRIMARY KEY,
  created_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  trace_id TEXT,
  span_id TEXT,
  parent_span_id TEXT,
  span_name TEXT,
  workspace_id TEXT,
  api_key_id TEXT,
  config_id TEXT,
  prompt_id TEXT,
  route TEXT,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  provider_requested TEXT,
  provider TEXT,
  model_requested TEXT,
  model TEXT,
  target_path TEXT,
  status INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  internal INTEGER NOT NULL,
  aborted INTEGER NOT NULL,
  latency_ms DOUBLE PRECISION,
  upstream_latency_ms DOUBLE PRECISION,
  first_byte_ms DOUBLE PRECISION,
  ttft_ms DOUBLE PRECISION,
  prompt_tokens BIGINT,
  completion_tokens BIGINT,
  total_tokens BIGINT,
  cached_tokens BIGINT,
  reasoning_tokens BIGINT,
  tokens_estimated INTEGER NOT NULL,
  cost DOUBLE PRECISION,
  cost_status TEXT NOT NULL,
  pricing_multiplier DOUBLE PRECISION NOT NULL,
  cache_status TEXT,
  retry_count INTEGER NOT NULL,
  attempt_count INTEGER NOT NULL,
  fallback_count INTEGER NOT NULL,
  attempts TEXT,
  metadata TEXT,
  hook_results TEXT,
  error_code TEXT,
  error_message TEXT,
  request_body TEXT,
  request_body_truncated INTEGER NOT NULL,
  response_body TEXT,
  response_body_truncated INTEGER NOT NULL
);
CREATE INDEX gateway_logs_created ON gateway_logs (created_at, id);
CREATE INDEX gateway_logs_workspace ON gateway_logs (workspace_id, created_at, id);
CREATE INDEX gateway_logs_trace ON gateway_logs (trace_id);
CREATE INDEX gateway_logs_api_key ON gateway_logs (api_key_id, created_at);
CREATE INDEX gateway_logs_config ON gateway_logs (config_id, created_at);
CREATE INDEX gateway_logs_provider ON gateway_logs (provider, created_at);
CREATE INDEX gateway_logs_model ON gateway_logs (model, created_at);
CREATE TABLE gateway_log_metadata (
  log_id TEXT NOT NULL,
  meta_key TEXT NOT NULL,
  meta_value TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX gateway_log_metadata_kv ON gateway_log_metadata (meta_key, meta_value, log_id);
CREATE INDEX gateway_log_metadata_log ON gateway_log_metadata (log_id);
CREATE INDEX gateway_log_metadata_created ON gateway_log_metadata (created_at)
`,
  },
  {
    // Indexes cost every insert and most served no query the routes run: the list and the groups
    // always scan a time range (the created index) and filter on the rest as they go. Kept: time,
    // workspace (a scoped caller's every query), trace (a point lookup, "find my request"), the
    // metadata key/value filter and the metadata time order (retention).
    version: 2,
    name: 'gateway_logs fewer indexes',
    up: `
DROP INDEX gateway_logs_api_key;
DROP INDEX gateway_logs_config;
DROP INDEX gateway_logs_provider;
DROP INDEX gateway_logs_model;
DROP INDEX gateway_log_metadata_log
`,
  },
  {
    // The rate limit or budget (plugin `limits`) that refused the request; null otherwise.
    version: 3,
    name: 'gateway_logs limit_policy_id',
    up: 'ALTER TABLE gateway_logs ADD COLUMN limit_policy_id TEXT',
  },
  {
    // Which API format the client spoke (chat, responses, messages): a front door may be translated to
    // another route's provider call, so the route alone no longer says what the client saw.
    version: 4,
    name: 'gateway_logs front_door',
    up: 'ALTER TABLE gateway_logs ADD COLUMN front_door TEXT',
  },
  {
    // The version of the stored prompt (plugin `prompts`) the request used; null otherwise.
    version: 5,
    name: 'gateway_logs prompt_version',
    up: 'ALTER TABLE gateway_logs ADD COLUMN prompt_version INTEGER',
  },
  {
    // MCP and A2A calls through the gateway (plugins `mcp`, `a2a`): the JSON-RPC method, and the tool of a tools/call.
    version: 6,
    name: 'gateway_logs rpc_method and tool_name',
    up: `
ALTER TABLE gateway_logs ADD COLUMN rpc_method TEXT;
ALTER TABLE gateway_logs ADD COLUMN tool_name TEXT`,
  },
  {
    // The request's headers as JSON, secrets redacted (finish.ts, headers.ts), for the detail view of one
    // request; null for entries written before.
    version: 7,
    name: 'gateway_logs request_headers',
    up: 'ALTER TABLE gateway_logs ADD COLUMN request_headers TEXT',
  },
  {
    // What a request was for analytics (entry.ts, EntryKind): `api`, or `housekeeping`, the gateway serving
    // itself (dashboard, API reference, sign-in probes, health, metrics, reads of the log), which the
    // analytics routes leave out unless asked. Entries already stored of the routes that are housekeeping by
    // default are marked too (one pass over the table, once), so the figures of the days before the upgrade
    // leave out the same traffic. The list is written out here, not taken from entry.ts: a migration's
    // text never changes once released, whatever the default becomes.
    version: 8,
    name: 'gateway_logs kind',
    up: `
ALTER TABLE gateway_logs ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';
UPDATE gateway_logs SET kind = 'housekeeping' WHERE route IN (
  'dashboard.redirect', 'dashboard.index', 'dashboard.asset', 'dashboard.session',
  'openapi.document', 'openapi.viewer', 'openapi.viewer.file',
  'auth.whoami', 'auth.sso.config', 'auth.sso.login', 'auth.sso.callback', 'auth.logout',
  'health', 'metrics',
  'logs.list', 'logs.get', 'logs.groups', 'analytics.groups', 'analytics.timeseries'
)`,
  },
  {
    // The rollups (analytics/): per cube (analytics/cubes.ts) one table of minute, hour and day rows, each holding
    // counts, sums and a latency sketch, kept by the writer in the transaction that inserts the rows; and every
    // row stored before, rolled up here. The text is built from the cubes and the sketch's bins, which therefore
    // never change once released: another shape is another migration.
    version: 9,
    name: 'gateway_log rollups',
    up: { sqlite: rollupMigration('sqlite'), postgres: rollupMigration('postgres') },
  },
  {
    // Bodies and headers out of the row (store/bodies.ts): `body_ref` points at them, in segment files beside an
    // SQLite file or in this side table. Rows written before keep theirs in their own columns (body_ref null).
    version: 10,
    name: 'gateway_log bodies',
    up: `
ALTER TABLE gateway_logs ADD COLUMN body_ref TEXT;
CREATE TABLE gateway_log_bodies (
  id TEXT PRIMARY KEY,
  created_at BIGINT NOT NULL,
  request_headers TEXT,
  hook_results TEXT,
  request_body TEXT,
  response_body TEXT
);
CREATE INDEX gateway_log_bodies_created ON gateway_log_bodies (created_at)`,
  },
  {
    // The routing plugin's decisions, a detail like the hook results: kept with the bodies. The row's own column stays
    // empty (it is there so a row's columns read the same whatever version wrote it).
    version: 11,
    name: 'gateway_log routing',
    up: `
ALTER TABLE gateway_logs ADD COLUMN routing TEXT;
ALTER TABLE gateway_log_bodies ADD COLUMN routing TEXT`,
  },
  {
    // Cached input tokens in the rollups (analytics' `cached_tokens`, per provider and model as per key), filled from
    // the rows still stored. The text is built from the cubes, frozen with this migration like 9's.
    version: 12,
    name: 'gateway_log rollups cached_tokens',
    up: cachedTokensMigration(),
  },
  {
    // The metadata index answers within a workspace (docs/security.md, "Tenant isolation"): a workspace's filter on a
    // metadata value looks in its own rows only, so whether another workspace stored the value shows in no answer and
    // in no answer's time. Rows stored before get their entry's workspace. Additive: a replica of the version before
    // writes rows without it (null), which a workspace's filter does not find until they age out.
    version: 13,
    name: 'gateway_log_metadata workspace_id',
    up: `
ALTER TABLE gateway_log_metadata ADD COLUMN workspace_id TEXT;
UPDATE gateway_log_metadata SET workspace_id = (SELECT l.workspace_id FROM gateway_logs l WHERE l.id = gateway_log_metadata.log_id);
CREATE INDEX gateway_log_metadata_workspace_kv ON gateway_log_metadata (workspace_id, meta_key, meta_value, log_id)`,
  },
  {
    // Analytics and budgets on the same numbers: the prompt-cache writes a provider reports (billed above input) stored per
    // entry, with the part written for an hour; reasoning and cache-write tokens summed in every rollup (the groups'
    // columns, the time series). Reasoning is filled from the rows still stored, like 12's cached tokens; rows stored
    // before hold no cache writes (null; their rollups 0). The text is built from the cubes, frozen with this migration.
    version: 14,
    name: 'gateway_log cache writes, rollups reasoning_tokens and cache_write_tokens',
    up: tokenKindsMigration(),
  },
  {
    // The price a cost was computed with (docs/cost.md), a detail like the routing decision: kept with the bodies. The
    // row's own column stays empty (it is there so a row's columns read the same whatever version wrote it).
    version: 15,
    name: 'gateway_log price',
    up: `
ALTER TABLE gateway_logs ADD COLUMN price TEXT;
ALTER TABLE gateway_log_bodies ADD COLUMN price TEXT`,
  },
];
