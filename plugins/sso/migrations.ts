import type { Migration } from '../../sdk/index.js';

/** Migration namespace of single sign-on sessions of people (the cookie secret as a SHA-256 digest). */
export const SSO_NAMESPACE = 'sso';

/**
 * Single sign-on sessions of people (the cookie secret as a SHA-256 digest).
 * Each version adopts the control-plane migration that made the same change (`Migration.adopts`).
 */
export const SSO_MIGRATIONS: readonly Migration[] = [
  {
    // Single sign-on sessions of people: the cookie's secret as a SHA-256 digest, the user, when the sign-in
    // happened (max_session_ttl counts from it) and when the session ends at the latest.
    version: 1,
    name: 'sessions',
    adopts: { namespace: 'control-plane', version: 6 },
    up: `
CREATE TABLE cp_sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX cp_sessions_user ON cp_sessions (user_id);
CREATE INDEX cp_sessions_expires ON cp_sessions (expires_at)`,
  },
];
