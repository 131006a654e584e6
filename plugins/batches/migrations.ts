import type { Migration } from '../../sdk/index.js';

/** Migration namespace of files and batches (its own, so its numbers never clash with another plugin's). */
export const BATCHES_NAMESPACE = 'batches';

/**
 * Files the gateway keeps, gateway-run batches and their lines: the durable
 * work queue (docs/batches.md). One text for both dialects: portable types,
 * JSON as TEXT, times as epoch ms. `owner` is the workspace id, or '' for
 * organisation-level callers (an equality, where NULL would need
 * `IS NOT DISTINCT FROM`). A batch's `request` (target, headers, caller) is
 * sealed: it holds provider credentials.
 */
export const BATCHES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'files_batches',
    up: `
CREATE TABLE gw_files (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  purpose TEXT NOT NULL,
  filename TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  line_count INTEGER NOT NULL,
  store TEXT NOT NULL,
  location TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX gw_files_owner ON gw_files (owner, id);
CREATE TABLE gw_batches (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  input_file_id TEXT NOT NULL,
  completion_window TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  in_progress_at BIGINT,
  expires_at BIGINT NOT NULL,
  finalizing_at BIGINT,
  completed_at BIGINT,
  failed_at BIGINT,
  expired_at BIGINT,
  cancelling_at BIGINT,
  cancelled_at BIGINT,
  errors TEXT,
  output_file_id TEXT,
  error_file_id TEXT,
  total INTEGER NOT NULL,
  completed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  metadata TEXT,
  request TEXT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT
);
CREATE INDEX gw_batches_owner ON gw_batches (owner, id);
CREATE INDEX gw_batches_status ON gw_batches (status);
CREATE TABLE gw_batch_lines (
  batch_id TEXT NOT NULL,
  line INTEGER NOT NULL,
  custom_id TEXT NOT NULL,
  byte_offset BIGINT NOT NULL,
  byte_length INTEGER NOT NULL,
  state TEXT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT,
  runs INTEGER NOT NULL,
  not_before BIGINT NOT NULL,
  result TEXT,
  PRIMARY KEY (batch_id, line)
);
CREATE INDEX gw_batch_lines_state ON gw_batch_lines (batch_id, state, line);
CREATE INDEX gw_batch_lines_lease ON gw_batch_lines (lease_owner)`,
  },
];
