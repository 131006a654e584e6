import { describe, expect, test } from 'vitest';
import { createGateway } from '../../../core/index.js';
import { migrate } from '../../../sdk/index.js';
import type { Identity, IdentityAdmin, UserInfo } from '../../../sdk/admin/index.js';
import { sqliteClient } from '../../../sdk/sqlite.js';
import { scim } from '../../../plugins/scim/index.js';
import { sso } from '../../../plugins/sso/index.js';
import { SSO_MIGRATIONS, SSO_NAMESPACE } from '../../../plugins/sso/migrations.js';
import { endAllSessions, Sessions } from '../../../plugins/sso/sessions.js';

/** Identity as far as sessions need it: the store, a clock, the cache's invalidation, and one user. */
async function setUp(deactivated: Set<string> | null) {
  const db = sqliteClient(':memory:');
  await migrate(db, SSO_NAMESPACE, SSO_MIGRATIONS);
  const listeners: Array<() => void> = [];
  const clock = { now: 1_000_000 };
  const identity = {
    sql: () => db,
    now: () => clock.now,
    cacheTtlMs: 60_000,
    onInvalidate: (l: () => void) => listeners.push(l),
    invalidate: () => listeners.forEach((l) => l()),
  } as unknown as Identity;
  const users = new Map<string, UserInfo>([['u1', { id: 'u1', email: 'ada@example.com', name: 'Ada' }]]);
  const people = { user: async (id: string) => users.get(id) ?? null } as unknown as IdentityAdmin;
  const status = deactivated === null ? undefined : { deactivated: async (id: string) => deactivated.has(id) };
  return { db, clock, identity, sessions: new Sessions(identity, people, status) };
}

describe('sessions (the sso plugin\'s table)', () => {
  test('a session started is found by its secret, with the person identity knows; an unknown secret is none', async () => {
    const { sessions } = await setUp(null);
    const secret = await sessions.start({ userId: 'u1', issuer: 'https://idp', subject: 's1', now: 1_000_000, ttlS: 60 });
    expect(secret).toMatch(/^gws-[A-Za-z0-9_-]{43}$/);
    expect(await sessions.find(secret)).toEqual({ id: expect.any(String), userId: 'u1', email: 'ada@example.com', name: 'Ada', createdAt: 1_000_000, expiresAt: 1_060_000, active: true });
    expect(await sessions.find(`${secret}x`)).toBeNull();
    // Without SCIM nobody is deactivated.
    expect(await sessions.mayStart('u1')).toBe(true);
  });

  test('a person SCIM deactivated may not start one, and an existing one reads as inactive', async () => {
    const deactivated = new Set<string>();
    const { sessions, identity } = await setUp(deactivated);
    const secret = await sessions.start({ userId: 'u1', issuer: 'https://idp', subject: 's1', now: 1_000_000, ttlS: 60 });
    expect((await sessions.find(secret))?.active).toBe(true);
    deactivated.add('u1');
    expect(await sessions.mayStart('u1')).toBe(false);
    // The cached entry stands until identity's caches clear (every admin or SCIM write clears them).
    expect((await sessions.find(secret))?.active).toBe(true);
    identity.invalidate();
    expect((await sessions.find(secret))?.active).toBe(false);
  });

  test('endAll ends every session of the person in the caller\'s transaction; end ends one and clears the cache', async () => {
    const { db, sessions } = await setUp(null);
    const a = await sessions.start({ userId: 'u1', issuer: 'i', subject: 's', now: 1_000_000, ttlS: 60 });
    const b = await sessions.start({ userId: 'u1', issuer: 'i', subject: 's', now: 1_000_000, ttlS: 60 });
    const entry = (await sessions.find(a))!;
    await sessions.end(entry.id);
    expect(await sessions.find(a)).toBeNull();
    expect(await sessions.find(b)).not.toBeNull();
    expect(await db.transaction((tx) => endAllSessions('u1', tx))).toBe(true);
    expect(await db.transaction((tx) => endAllSessions('u1', tx))).toBe(false);
  });

  test('each sign-in sweeps the sessions past their latest end', async () => {
    const { db, sessions } = await setUp(null);
    await sessions.start({ userId: 'u1', issuer: 'i', subject: 's', now: 1_000_000, ttlS: 60 });
    await sessions.start({ userId: 'u1', issuer: 'i', subject: 's', now: 1_060_000, ttlS: 60 });
    expect(await db.get('SELECT COUNT(*) AS n FROM cp_sessions')).toEqual({ n: 1 });
  });
});

describe('without the control plane', () => {
  test.each([
    ['sso', sso],
    ['scim', scim],
  ] as const)('%s stops the boot, naming the identity service it needs', (_name, plugin) => {
    expect(() => createGateway({ plugins: [plugin()] })).toThrow(/requires the service "gateway\.identity" \(provided by the control-plane plugin\)/);
  });
});
