import type { Migration } from '../../../sdk/index.js';

/** Migration namespace of the Messages door's threads. */
export const THREADS_NAMESPACE = 'message-threads';

/**
 * One row per answered turn of a thread (Anthropic's `thread` field, kept by the gateway), one text for both
 * dialects. Keyed by workspace and the answer's message id: a workspace never continues another's thread.
 * `thread_id` is the id of the turn that created the thread; a thread lives while any of its turns is younger
 * than the time to live (`created_at`), so expiry deletes whole threads, never the middle of one.
 */
export const THREAD_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'gateway_message_threads',
    up: `
CREATE TABLE gateway_message_threads (
  workspace_id TEXT NOT NULL,
  id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  previous_id TEXT,
  created_at BIGINT NOT NULL,
  provider TEXT,
  native INTEGER NOT NULL,
  upstream TEXT,
  model TEXT,
  fixed TEXT,
  input_messages TEXT NOT NULL,
  output TEXT NOT NULL,
  PRIMARY KEY (workspace_id, id)
);
CREATE INDEX gateway_message_threads_thread ON gateway_message_threads (workspace_id, thread_id, created_at);
CREATE INDEX gateway_message_threads_created ON gateway_message_threads (created_at)
`,
  },
];
