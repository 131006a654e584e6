import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { SqlClient } from '../../sdk/index.js';
import { SqlTables, TtlCache, type AccountStatus, type Identity, type IdentityAdmin } from '../../sdk/admin/index.js';

/** A signed-in person's session, as the request path checks it. */
export interface SessionEntry {
  id: string;
  userId: string;
  email: string;
  name: string | null;
  /** When the person signed in: `max_session_ttl` counts from here. */
  createdAt: number;
  /** The latest end the session was given when it started. */
  expiresAt: number;
  /** False once the person was deactivated (SCIM). */
  active: boolean;
}

/** Prefix of session secrets (in the cookie), so secret scanners and people recognise them. */
export const SESSION_PREFIX = 'gws-';
const MAX_CACHED = 10_000;

/** How a session's secret is kept and looked up: its SHA-256 digest (secrets are random 256-bit values: no salt needed). */
const digestOf = (secret: string): string => hash('sha256', secret, 'hex');

/** Ends every session of a person, in the caller's transaction (`SignInSessions.endAll`, for SCIM's deactivations). */
export async function endAllSessions(userId: string, tx: SqlClient): Promise<boolean> {
  return (await tx.run('DELETE FROM cp_sessions WHERE user_id = ?', [userId])).changes > 0;
}

/**
 * The sessions of people signed in (`cp_sessions`, this plugin's table): the
 * secret lives in the person's cookie only, the table keeps its digest, the
 * user, when the sign-in happened and when the session ends at the latest.
 * The request path reads a session through a TTL cache that clears with
 * identity's (a membership removed, a person deactivated, a logout).
 */
export class Sessions {
  readonly #tables: SqlTables;
  readonly #cache: TtlCache<SessionEntry | null>;

  constructor(
    private readonly identity: Identity,
    private readonly people: IdentityAdmin,
    /** The `scim` plugin's word on who is deactivated, when it is loaded. */
    private readonly status: AccountStatus | undefined,
  ) {
    this.#tables = new SqlTables(() => identity.sql(), new Set(['created_at', 'expires_at']));
    this.#cache = new TtlCache(identity.cacheTtlMs, MAX_CACHED, () => identity.now());
    identity.onInvalidate(() => this.#cache.clear());
  }

  /** The session of this secret, through the cache; null when there is none. */
  find(secret: string): SessionEntry | null | Promise<SessionEntry | null> {
    const digest = digestOf(secret);
    return this.#cache.get(digest, async () => {
      const row = await this.#tables.get<{ id: string; user_id: string; created_at: number; expires_at: number }>(
        'SELECT id, user_id, created_at, expires_at FROM cp_sessions WHERE token_hash = ?',
        [digest],
      );
      const user = row === undefined ? null : await this.people.user(row.user_id);
      if (row === undefined || user === null) return null;
      const deactivated = (await this.status?.deactivated(user.id)) ?? false;
      return Object.freeze({ id: row.id, userId: user.id, email: user.email, name: user.name, createdAt: row.created_at, expiresAt: row.expires_at, active: !deactivated });
    });
  }

  /** Whether the person may sign in (not deactivated). */
  async mayStart(userId: string): Promise<boolean> {
    return !((await this.status?.deactivated(userId)) ?? false);
  }

  /** Starts a session of `ttlS` seconds from `now`: its secret, for the cookie. Sessions past their latest end are swept first. */
  async start(session: { userId: string; issuer: string; subject: string; now: number; ttlS: number }): Promise<string> {
    // Sessions past their latest end are of no use to anyone: each sign-in sweeps them.
    await this.identity.sql().run('DELETE FROM cp_sessions WHERE expires_at <= ?', [session.now]);
    const secret = SESSION_PREFIX + randomBytes(32).toString('base64url');
    await this.#tables.insert('cp_sessions', {
      id: randomUUID(),
      token_hash: digestOf(secret),
      user_id: session.userId,
      issuer: session.issuer,
      subject: session.subject,
      created_at: session.now,
      expires_at: session.now + session.ttlS * 1000,
    });
    return secret;
  }

  /** Ends one session (a logout); every cache clears, so it ends at once on this instance. */
  async end(id: string): Promise<void> {
    await this.identity.sql().run('DELETE FROM cp_sessions WHERE id = ?', [id]);
    this.identity.invalidate();
  }
}
