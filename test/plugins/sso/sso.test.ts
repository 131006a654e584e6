import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createGateway, type Gateway, type GatewayPlugin } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { controlPlane } from '../../../plugins/control-plane/index.js';
import { scim } from '../../../plugins/scim/index.js';
import { sso } from '../../../plugins/sso/index.js';
import { retry } from '../../../plugins/retry/index.js';
import { postgresStore } from '../../../plugins/stores/postgres/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { DEFAULT_CONFIG } from '../../../server/default-config.js';
import { BOOTSTRAP_KEY, GATEWAY_KEY, memoryLogger, startTestServer } from '../../helpers/gateway.js';
import { rewriteClaims, startOidcProvider, type TestOidcProvider } from '../../helpers/oidc-provider.js';
import { LOOPBACK_HOSTS } from '../../helpers/outbound.js';
import { DATABASE_URL, dropSchema, requireService, uniqueSchema } from '../../helpers/services.js';

const ADMIN = 'admin-bootstrap-key-sso-0000001';
const SCIM_TOKEN = 'scim-token-for-the-sso-tests-0123456789';
type Json = Record<string, any>;

/** A browser, as far as sign-in needs one: cookies per origin, redirects followed by hand. */
class Browser {
  readonly jar = new Map<string, Map<string, string>>();

  cookie(url: string, name: string): string | undefined {
    return this.jar.get(new URL(url).origin)?.get(name);
  }

  async request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
    const origin = new URL(url).origin;
    const cookies = [...(this.jar.get(origin) ?? new Map()).entries()].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { method: init.method ?? 'GET', redirect: 'manual', headers: { ...(cookies === '' ? {} : { cookie: cookies }), ...init.headers }, body: init.body });
    const jar = this.jar.get(origin) ?? new Map<string, string>();
    this.jar.set(origin, jar);
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) jar.delete(name);
      else jar.set(name, pair!.slice(eq + 1).trim());
    }
    const text = await res.text();
    let body: Json = {};
    try {
      body = text === '' ? {} : JSON.parse(text);
    } catch {
      body = { text };
    }
    return { status: res.status, headers: res.headers, body, location: res.headers.get('location') };
  }
}

function suite(name: string, makeStore: () => Promise<(() => GatewayPlugin) | null>) {
  describe(`single sign-on on ${name}`, () => {
    let store: (() => GatewayPlugin) | null = null;
    let idp: TestOidcProvider;
    let server: Server;
    let gateway: Gateway;
    let gw = '';
    const clock = { now: Date.now() };
    const ids: Json = {};
    const logs = memoryLogger();

    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${gw}/v1${path}`, {
        method,
        headers: { 'x-gateway-api-key': ADMIN, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      return JSON.parse(text) as Json;
    };

    /** Signs in through the provider as `account`; returns the browser and the callback's answer. */
    const signIn = async (account: string, returnTo: string | null = '/dashboard', browser = new Browser()) => {
      idp.loginAs = account;
      const login = await browser.request(`${gw}/v1/auth/sso/login${returnTo === null ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`);
      expect(login.status, JSON.stringify(login.body)).toBe(302);
      let next = login.location!;
      const hops: string[] = [];
      // Through the provider's authorization endpoint and login interaction, back to the gateway's callback.
      while (!next.startsWith(gw)) {
        hops.push(next);
        expect(hops.length).toBeLessThan(10);
        const r = await browser.request(new URL(next, idp.issuer).href);
        expect([302, 303], JSON.stringify(r.body)).toContain(r.status);
        next = new URL(r.location!, idp.issuer).href;
      }
      const callback = await browser.request(next);
      return { browser, login, callback, callbackUrl: next };
    };
    const call = (browser: Browser, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
      browser.request(`${gw}/v1${path}`, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });

    beforeAll(async () => {
      store = await makeStore();
      if (store === null) return;
      server = createServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      gw = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      idp = await startOidcProvider(`${gw}/v1/auth/sso/callback`);
      idp.accounts.set('alice', { email: 'Alice@Corp.example', email_verified: true, name: 'Alice Liddell' });
      idp.accounts.set('bob', { email: 'bob@corp.example', email_verified: true, name: 'Bob', emailInUserinfoOnly: true });
      idp.accounts.set('eve', { email: 'eve@corp.example', email_verified: false });
      idp.accounts.set('nomail', { name: 'No Mail' });
      gateway = createGateway({
        plugins: [
          store(),
          controlPlane({ bootstrapKey: ADMIN, dataDir: await mkdtemp(join(tmpdir(), 'gw-sso-')), now: () => clock.now, announce: () => undefined }),
          scim({ token: SCIM_TOKEN }),
          sso({ issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret, redirectUri: `${gw}/v1/auth/sso/callback`, allowHttpIssuer: true, now: () => clock.now }),
          config(),
          retry(),
        ],
        options: { outbound: { allowHosts: LOOPBACK_HOSTS } },
        logger: logs.logger,
      });
      server.on('request', gateway.handler);
      await gateway.ready;
      ids.A = (await admin('POST', '/workspaces', { name: 'Team A', slug: 'team-a' })).id;
      ids.B = (await admin('POST', '/workspaces', { name: 'Team B', slug: 'team-b' })).id;
      ids.configB = (await admin('POST', '/configs', { name: 'b', workspace_id: ids.B, config: { retry: { attempts: 1 } } })).id;
    });

    afterAll(async () => {
      if (store === null) return;
      server?.closeAllConnections();
      server?.close();
      await gateway?.close(500);
      await idp?.close();
    });

    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (ctx) => {
        if (store === null) ctx.skip();
        await fn();
      });

    it('login: authorization code with PKCE through discovery; the ID token verified; the user created by email; an HttpOnly session cookie; whoami', async () => {
      const { browser, login, callback } = await signIn('alice');
      const auth = new URL(login.location!);
      expect(`${auth.origin}${auth.pathname}`).toBe(`${idp.issuer}/auth`);
      expect(auth.searchParams.get('response_type')).toBe('code');
      expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
      expect(auth.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(auth.searchParams.get('state')).toBeTruthy();
      expect(auth.searchParams.get('nonce')).toBeTruthy();
      expect(auth.searchParams.get('scope')).toBe('openid email profile');
      expect(auth.searchParams.get('redirect_uri')).toBe(`${gw}/v1/auth/sso/callback`);
      expect(login.headers.get('set-cookie')).toMatch(/^gw_sso_login=v1:[^;]+; Path=\/v1\/auth\/sso; Max-Age=600; HttpOnly; SameSite=Lax$/);
      expect(idp.seen).toContain('/.well-known/openid-configuration');
      expect(idp.seen).toContain('/jwks');

      expect(callback.status, JSON.stringify(callback.body)).toBe(302);
      expect(callback.location).toBe('/dashboard');
      const cookies = callback.headers.getSetCookie();
      expect(cookies.find((c) => c.startsWith('gw_session='))).toMatch(/^gw_session=gws-[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);
      expect(cookies.find((c) => c.startsWith('gw_sso_login='))).toMatch(/Max-Age=0/);
      const secret = browser.cookie(gw, 'gw_session')!;
      expect(logs.text()).not.toContain(secret);

      const who = await call(browser, 'GET', '/auth/whoami');
      expect(who.status, JSON.stringify(who.body)).toBe(200);
      expect(who.body).toMatchObject({ object: 'whoami', type: 'session', user: { email: 'alice@corp.example', name: 'Alice Liddell' }, workspace_id: null, role: null, scopes: [], workspaces: [] });
      expect(who.body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(JSON.stringify(who.body)).not.toContain(secret);
      ids.alice = who.body.user.id;
      // No workspace yet: nothing but whoami and logout.
      const none = await call(browser, 'GET', '/configs');
      expect(none.status).toBe(403);
      expect(none.body.error.message).toMatch(/not a member of any workspace/);
      // The same user (by email) is the one the admin API adds.
      expect((await admin('POST', `/workspaces/${ids.A}/members`, { email: 'alice@corp.example', role: 'admin' })).user_id).toBe(ids.alice);
      // Joined later: without x-gateway-workspace, a session acts in the oldest membership (team-a).
      clock.now += 1000;
      await admin('POST', `/workspaces/${ids.B}/members`, { email: 'alice@corp.example', role: 'member' });
      // A second sign-in matches the same user.
      const again = await signIn('alice', null);
      expect(again.callback.status).toBe(200);
      expect(again.callback.body).toMatchObject({ object: 'session', user: { id: ids.alice, email: 'alice@corp.example' } });
      ids.browser = browser;
    });

    it('a session calls the admin API with the role held in the workspace it acts in; changes need the CSRF header; another workspace is out of reach', async () => {
      const browser = ids.browser as Browser;
      const who = await call(browser, 'GET', '/auth/whoami');
      expect(who.body).toMatchObject({ workspace_id: ids.A, role: 'admin' });
      expect(who.body.workspaces.map((w: Json) => [w.slug, w.role])).toEqual([['team-a', 'admin'], ['team-b', 'member']]);
      const csrf = who.body.csrf_token;
      expect((await call(browser, 'GET', '/configs')).status).toBe(200);
      const noCsrf = await call(browser, 'POST', '/configs', {}, { name: 'mine', config: { retry: { attempts: 2 } } });
      expect(noCsrf.status).toBe(403);
      expect(noCsrf.body.error).toMatchObject({ code: 'forbidden', param: 'x-gateway-csrf' });
      const wrong = await call(browser, 'POST', '/configs', { 'x-gateway-csrf': 'x'.repeat(43) }, { name: 'mine', config: { retry: { attempts: 2 } } });
      expect(wrong.status).toBe(403);
      const made = await call(browser, 'POST', '/configs', { 'x-gateway-csrf': csrf }, { name: 'mine', config: { retry: { attempts: 2 } } });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      expect(made.body.workspace_id).toBe(ids.A);
      // In team-b the person is a member: reading is allowed, writing is not, and team-a's config is not there.
      const asMember = { 'x-gateway-workspace': 'team-b', 'x-gateway-csrf': csrf };
      expect((await call(browser, 'GET', `/configs/${ids.configB}`, asMember)).status).toBe(200);
      const denied = await call(browser, 'POST', '/configs', asMember, { name: 'x', config: { retry: { attempts: 2 } } });
      expect(denied.status).toBe(403);
      expect(denied.body.error.message).toMatch(/lacks the "configs.create" scope/);
      expect((await call(browser, 'GET', `/configs/${made.body.id}`, asMember)).status).toBe(404);
      expect((await call(browser, 'GET', `/configs/${ids.configB}`)).status).toBe(404);
      const outsider = await call(browser, 'GET', '/configs', { 'x-gateway-workspace': 'default' });
      expect(outsider.status).toBe(403);
      expect(outsider.body.error).toMatchObject({ param: 'x-gateway-workspace' });
      // Organisation-level routes stay out of reach of a workspace admin.
      expect((await call(browser, 'GET', '/organisation/settings')).status).toBe(403);
      // A key next to the cookie wins: an unknown key is a 401, the cookie does not rescue it.
      expect((await call(browser, 'GET', '/configs', { 'x-gateway-api-key': 'gwk-unknown-key-000000000000000000' })).status).toBe(401);
    });

    it('a tampered ID token is refused (a changed claim, or a signature by another key), and so is a callback with another state or from another browser', async () => {
      const refused = async (tamper: (t: string) => string) => {
        idp.tamperIdToken = tamper;
        const { callback } = await signIn('alice');
        expect(callback.status, JSON.stringify(callback.body)).toBe(401);
        expect(callback.body.error.message).toMatch(/Sign-in failed: the identity provider's answer could not be verified/);
        expect(callback.headers.getSetCookie().some((c) => c.startsWith('gw_session='))).toBe(false);
        expect(idp.tamperIdToken).toBeNull();
      };
      // alice becomes mallory: same signature, other payload.
      await refused((t) => rewriteClaims(t, (c) => void (c.email = 'mallory@corp.example')));
      // Signed with an attacker's key under the provider's kid.
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      await refused((t) => {
        const [header, payload] = rewriteClaims(t, (c) => void (c.email = 'mallory@corp.example')).split('.');
        return `${header}.${payload}.${sign('sha256', Buffer.from(`${header}.${payload}`), privateKey).toString('base64url')}`;
      });
      expect(logs.lines().filter((l) => l.msg === 'single sign-on: a sign-in was refused').length).toBeGreaterThanOrEqual(2);

      // The state in the callback must be the login's.
      idp.loginAs = 'alice';
      const fresh = new Browser();
      const login = await fresh.request(`${gw}/v1/auth/sso/login`);
      let next = login.location!;
      while (!next.startsWith(gw)) next = new URL((await fresh.request(new URL(next, idp.issuer).href)).location!, idp.issuer).href;
      const swapped = new URL(next);
      swapped.searchParams.set('state', 'not-the-state');
      const bad = await fresh.request(swapped.href);
      expect(bad.status).toBe(401);
      // The real callback in a browser that did not start the login: no login cookie.
      const stranger = await new Browser().request(next);
      expect(stranger.status).toBe(400);
      expect(stranger.body.error.message).toMatch(/not started from this browser/);
      // An error from the provider.
      expect((await new Browser().request(`${gw}/v1/auth/sso/callback?error=access_denied&state=x`)).status).toBe(401);
    });

    it("sessions are bounded by the organisation's max_session_ttl (a lowered one ends older sessions too) and by the plugin's own 12 hours", async () => {
      await admin('PUT', '/organisation/settings', { session_settings: { max_session_ttl: 900 } });
      const start = clock.now;
      const { browser, callback } = await signIn('alice');
      expect(callback.headers.getSetCookie().find((c) => c.startsWith('gw_session='))).toMatch(/Max-Age=900;/);
      const who = await call(browser, 'GET', '/auth/whoami');
      expect(who.body.session).toEqual({ created_at: new Date(start).toISOString(), expires_at: new Date(start + 900_000).toISOString() });
      clock.now = start + 899_000;
      expect((await call(browser, 'GET', '/configs')).status).toBe(200);
      clock.now = start + 900_000;
      const expired = await call(browser, 'GET', '/configs');
      expect(expired.status).toBe(401);
      expect(expired.body.error.message).toMatch(/^Session expired: .*max_session_ttl 900 s/);

      // A session started without an organisation limit ends once one is set that it exceeds.
      await admin('PUT', '/organisation/settings', { session_settings: { max_session_ttl: null } });
      const later = clock.now;
      const second = await signIn('alice');
      clock.now = later + 3_600_000;
      expect((await call(second.browser, 'GET', '/configs')).status).toBe(200);
      await admin('PUT', '/organisation/settings', { session_settings: { max_session_ttl: 1800 } });
      expect((await call(second.browser, 'GET', '/configs')).status).toBe(401);
      await admin('PUT', '/organisation/settings', { session_settings: { max_session_ttl: null } });
      expect((await call(second.browser, 'GET', '/configs')).status).toBe(200);
      clock.now = later + 12 * 3_600_000;
      expect((await call(second.browser, 'GET', '/configs')).status).toBe(401);
      clock.now = Date.now();
    });

    it('logout needs the CSRF header, ends the session and clears the cookie; the provider\'s end-session URL is given', async () => {
      const { browser } = await signIn('alice');
      const csrf = (await call(browser, 'GET', '/auth/whoami')).body.csrf_token;
      expect((await call(browser, 'POST', '/auth/logout')).status).toBe(403);
      const out = await call(browser, 'POST', '/auth/logout', { 'x-gateway-csrf': csrf });
      expect(out.status, JSON.stringify(out.body)).toBe(200);
      expect(out.body).toMatchObject({ object: 'session', logged_out: true });
      expect(out.body.end_session_url).toMatch(new RegExp(`^${idp.issuer}/session/end\\?client_id=ai-gateway`));
      expect(out.headers.getSetCookie()[0]).toMatch(/^gw_session=; Path=\/; Max-Age=0/);
      expect(browser.cookie(gw, 'gw_session')).toBeUndefined();
      // The old cookie, replayed after logout: the session is gone.
      const { browser: b2 } = await signIn('alice');
      const stale = b2.cookie(gw, 'gw_session')!;
      await call(b2, 'POST', '/auth/logout', { 'x-gateway-csrf': (await call(b2, 'GET', '/auth/whoami')).body.csrf_token });
      const gone = await fetch(`${gw}/v1/auth/whoami`, { headers: { cookie: `gw_session=${stale}` } });
      expect(gone.status).toBe(401);
      expect((await gone.json()).error.message).toMatch(/session has ended or is unknown/);
      // An API key cannot log out.
      const keyLogout = await fetch(`${gw}/v1/auth/logout`, { method: 'POST', headers: { 'x-gateway-api-key': ADMIN } });
      expect(keyLogout.status).toBe(400);
    });

    it('whoami describes an API key too; return_to must be a path here; the email may come from userinfo; unverified or missing emails are refused', async () => {
      const key = await fetch(`${gw}/v1/auth/whoami`, { headers: { 'x-gateway-api-key': ADMIN } });
      expect(await key.json()).toMatchObject({ object: 'whoami', type: 'organisation-service', workspace_id: null, scopes: ['*'] });
      expect((await fetch(`${gw}/v1/auth/whoami`)).status).toBe(401);
      for (const bad of ['https://evil.example/', '//evil.example', '/\\evil.example', 'relative']) {
        const r = await new Browser().request(`${gw}/v1/auth/sso/login?return_to=${encodeURIComponent(bad)}`);
        expect(r.status).toBe(400);
        expect(r.body.error.param).toBe('return_to');
      }
      const bob = await signIn('bob', null);
      expect(bob.callback.status, JSON.stringify(bob.callback.body)).toBe(200);
      expect(bob.callback.body.user.email).toBe('bob@corp.example');
      expect(idp.seen).toContain('/me');
      const eve = await signIn('eve');
      expect(eve.callback.status).toBe(403);
      expect(eve.callback.body.error.message).toMatch(/not verified/);
      const nomail = await signIn('nomail');
      expect(nomail.callback.status).toBe(403);
      expect(nomail.callback.body.error.message).toMatch(/no email address/);
    });

    it('SCIM deactivation ends the sessions of the person and refuses their next sign-in', async () => {
      const { browser } = await signIn('alice');
      expect((await call(browser, 'GET', '/auth/whoami')).status).toBe(200);
      const scimCall = (method: string, path: string, body: unknown) =>
        fetch(`${gw}/scim/v2${path}`, { method, headers: { authorization: `Bearer ${SCIM_TOKEN}`, 'content-type': 'application/scim+json' }, body: JSON.stringify(body) });
      const created = await scimCall('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'alice@corp.example', emails: [{ value: 'alice@corp.example', primary: true }] });
      expect(created.status).toBe(201);
      const user = await created.json();
      expect(user.id).toBe(ids.alice);
      await scimCall('PATCH', `/Users/${user.id}`, { Operations: [{ op: 'replace', value: { active: false } }] });
      const ended = await call(browser, 'GET', '/auth/whoami');
      expect(ended.status).toBe(401);
      const refused = await signIn('alice');
      expect(refused.callback.status).toBe(403);
      expect(refused.callback.body.error.message).toMatch(/deactivated/);
      await scimCall('PATCH', `/Users/${user.id}`, { Operations: [{ op: 'replace', value: { active: true } }] });
      expect((await signIn('alice')).callback.status).toBe(302);
    });
  });
}

suite('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gw-sso-sql-'));
  return () => sqliteStore({ dataDir: dir });
});

const schema = uniqueSchema('sso');
suite('postgres', async () => {
  if (!(await requireService('PostgreSQL', DATABASE_URL))) return null;
  return () => postgresStore({ url: DATABASE_URL, schema });
});

afterAll(async () => {
  if (await requireService('PostgreSQL', DATABASE_URL).catch(() => false)) await dropSchema(schema);
});

describe('single sign-on without a provider, or with one the outbound host policy refuses', () => {
  test('no issuer: the sign-in routes say so (404) and whoami still serves keys; a refused provider host is a 400 naming it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'gw-sso-off-'));
    const start = async (plugin: GatewayPlugin, allowHosts: readonly string[]) => {
      const server = createServer();
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const gateway = createGateway({
        plugins: [sqliteStore({ dataDir }), controlPlane({ bootstrapKey: ADMIN, dataDir, announce: () => undefined }), plugin],
        options: { outbound: { allowHosts } },
        logger: memoryLogger().logger,
      });
      server.on('request', gateway.handler);
      await gateway.ready;
      return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: async () => {
          server.closeAllConnections();
          server.close();
          await gateway.close(500);
        },
      };
    };
    const off = await start(sso(), LOOPBACK_HOSTS);
    try {
      const login = await fetch(`${off.url}/v1/auth/sso/login`, { redirect: 'manual' });
      expect(login.status).toBe(404);
      expect((await login.json()).error.message).toMatch(/Single sign-on is not configured/);
      expect(await (await fetch(`${off.url}/v1/auth/sso/config`)).json()).toEqual({ object: 'sso_config', enabled: false, login_url: null });
      expect((await fetch(`${off.url}/v1/auth/whoami`, { headers: { 'x-gateway-api-key': ADMIN } })).status).toBe(200);
    } finally {
      await off.close();
    }
    const idp = await startOidcProvider('http://127.0.0.1:1/v1/auth/sso/callback');
    const refused = await start(sso({ issuer: idp.issuer, clientId: idp.clientId, redirectUri: 'http://127.0.0.1:1/v1/auth/sso/callback', allowHttpIssuer: true }), []);
    try {
      // Configured: a sign-in page is told to offer it, without a key and without touching the provider.
      expect(await (await fetch(`${refused.url}/v1/auth/sso/config`)).json()).toEqual({ object: 'sso_config', enabled: true, login_url: '/v1/auth/sso/login' });
      const login = await fetch(`${refused.url}/v1/auth/sso/login`, { redirect: 'manual' });
      expect(login.status).toBe(400);
      expect(await login.json()).toMatchObject({ error: { code: 'host_not_allowed' } });
      expect(idp.seen).toEqual([]);
    } finally {
      await refused.close();
      await idp.close();
    }
    expect(() => sso({ issuer: 'http://idp.example.com', clientId: 'x', redirectUri: 'https://gw.example.com/v1/auth/sso/callback' })).toThrow(/issuer must be an https:\/\/ URL/);
    expect(() => sso({ issuer: 'https://idp.example.com' })).toThrow(/clientId and redirectUri are required/);
  });
});

describe('single sign-on with the bundled default config', () => {
  test('a session authenticates next to auth-static (a request without a key reaches the session stage): login, callback, whoami, the admin API; no credentials and a wrong key are still 401s', async () => {
    // The gateway's public address (its registered redirect URI) is not the test server's ephemeral one, as behind a
    // proxy: the browser below is sent to it and goes to the test server instead.
    const publicUrl = 'http://gateway.test';
    const idp = await startOidcProvider(`${publicUrl}/v1/auth/sso/callback`);
    idp.accounts.set('carol', { email: 'carol@corp.example', email_verified: true, name: 'Carol' });
    idp.loginAs = 'carol';
    const plugins = DEFAULT_CONFIG.plugins.map((p) => (p.name === 'sso' ? { name: 'sso', options: { allowHttpIssuer: true } } : p));
    expect(plugins.map((p) => p.name)).toEqual(expect.arrayContaining(['auth-static', 'control-plane', 'sso']));
    const gw = await startTestServer({
      config: { ...DEFAULT_CONFIG, plugins },
      env: { GATEWAY_OIDC_ISSUER: idp.issuer, GATEWAY_OIDC_CLIENT_ID: idp.clientId, GATEWAY_OIDC_CLIENT_SECRET: idp.clientSecret, GATEWAY_OIDC_REDIRECT_URI: `${publicUrl}/v1/auth/sso/callback` },
    });
    try {
      const browser = new Browser();
      const login = await browser.request(`${gw.url}/v1/auth/sso/login?return_to=/dashboard`);
      expect(login.status, JSON.stringify(login.body)).toBe(302);
      let next = login.location!;
      for (let hops = 0; !next.startsWith(publicUrl); hops++) {
        expect(hops).toBeLessThan(10);
        const r = await browser.request(new URL(next, idp.issuer).href);
        expect([302, 303], JSON.stringify(r.body)).toContain(r.status);
        next = new URL(r.location!, idp.issuer).href;
      }
      const callback = await browser.request(next.replace(publicUrl, gw.url));
      expect(callback.status, JSON.stringify(callback.body)).toBe(302);
      expect(callback.location).toBe('/dashboard');
      expect(browser.cookie(gw.url, 'gw_session')).toMatch(/^gws-/);

      const who = await browser.request(`${gw.url}/v1/auth/whoami`);
      expect(who.status, JSON.stringify(who.body)).toBe(200);
      expect(who.body).toMatchObject({ object: 'whoami', type: 'session', user: { email: 'carol@corp.example' }, workspaces: [] });
      const admin = (method: string, path: string, body: unknown) =>
        fetch(`${gw.url}/v1${path}`, { method, headers: { 'x-gateway-api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await admin('POST', '/workspaces/default/members', { email: 'carol@corp.example', role: 'admin' })).status).toBe(200);

      // The admin API with the session: a read, and a change with the CSRF header.
      const csrf = (await browser.request(`${gw.url}/v1/auth/whoami`)).body.csrf_token as string;
      const configs = await browser.request(`${gw.url}/v1/configs`);
      expect(configs.status, JSON.stringify(configs.body)).toBe(200);
      const created = await browser.request(`${gw.url}/v1/configs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-csrf': csrf },
        body: JSON.stringify({ name: 'from a session', config: { retry: { attempts: 2 } } }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      expect((await browser.request(`${gw.url}/v1/configs`)).body.data.map((c: Json) => c.name)).toContain('from a session');

      // No credentials at all: the same 401 as before sessions were reachable.
      const none = await fetch(`${gw.url}/v1/configs`);
      expect(none.status).toBe(401);
      expect((await none.json()).error).toMatchObject({ code: 'unauthorized', param: 'x-gateway-api-key', message: 'Missing gateway API key: send it in the x-gateway-api-key header.' });
      // A key wins over the cookie: a wrong one is a 401 although the session is valid; a static key works as ever.
      const wrong = await browser.request(`${gw.url}/v1/configs`, { headers: { 'x-gateway-api-key': 'not-a-known-key-000000' } });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.message).toBe('Missing or unknown gateway API key (x-gateway-api-key).');
      expect((await fetch(`${gw.url}/v1/configs`, { headers: { 'x-gateway-api-key': GATEWAY_KEY } })).status).toBe(200);
    } finally {
      await gw.close();
      await idp.close();
    }
  });
});
