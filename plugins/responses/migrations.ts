import type { Migration } from '../../sdk/index.js';

/** Migration namespace of the stored responses. */
export const RESPONSES_NAMESPACE = 'responses';

/**
 * Stored responses, one text for both dialects (portable types: TEXT, INTEGER,
 * BIGINT; JSON as TEXT, booleans 0/1, times in epoch ms). Keyed by workspace
 * and id: a workspace never sees another's responses, even with the same id
 * (a cache hit replays an answer, and its id, in the workspace that cached it).
 * `created_at` serves retention; the chain of a conversation is followed by
 * `previous_response_id` within the workspace (the primary key).
 */
export const RESPONSE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'gateway_responses',
    up: `
CREATE TABLE gateway_responses (
  workspace_id TEXT NOT NULL,
  id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  status TEXT NOT NULL,
  model TEXT,
  provider TEXT,
  native INTEGER NOT NULL,
  previous_response_id TEXT,
  input_items TEXT NOT NULL,
  response TEXT NOT NULL,
  PRIMARY KEY (workspace_id, id)
);
CREATE INDEX gateway_responses_created ON gateway_responses (created_at)
`,
  },
];
