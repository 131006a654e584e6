import { createHash, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';
import {
  type AuthInfo,
  GatewayError,
  type GatewayPlugin,
  type GatewayResponse,
  hasScope,
  jsonResponse,
  migrate,
  parseOptions,
  type RequestContext,
  STAGES, stateKey } from '../../sdk/index.js';
import { ACCOUNT_STATUS, IDENTITY, IDENTITY_ADMIN, SIGN_IN_SESSIONS, type Identity, type IdentityAdmin, type UserWorkspace } from '../../sdk/admin/index.js';
import { readCookie, setCookie } from './cookies.js';
import { SSO_MIGRATIONS, SSO_NAMESPACE } from './migrations.js';
import { failureCode, OidcClient, policyFetch } from './oidc.js';
import { endAllSessions, SESSION_PREFIX, Sessions, type SessionEntry } from './sessions.js';

export const PLUGIN_NAME = 'sso';
/** The API reference's group of the sign-in routes. */
const SSO_TAG = 'Single sign-on';

/** How long a sign-in may take between the login route and the callback. */
const LOGIN_TTL_S = 600;
/** Header a cookie-authenticated request that changes anything must carry (see `csrfToken`). */
export const CSRF_HEADER = 'x-gateway-csrf';
/** `workspaceId` of a signed-in person who belongs to no workspace: neither a UUID nor a slug, so it matches no workspace. */
const NO_WORKSPACE = '(none)';
/** Routes a person with no workspace may still call. */
const MEMBERLESS_ROUTES = new Set(['auth.whoami', 'auth.logout']);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const Url = (what: string) => v.pipe(v.string(), v.url(`must be an absolute URL (${what})`));

const OptionsSchema = v.strictObject({
  /** GATEWAY_OIDC_ISSUER: the identity provider's issuer URL; discovery reads `<issuer>/.well-known/openid-configuration`. Unset: no sign-in routes. */
  issuer: v.optional(Url('the issuer')),
  /** GATEWAY_OIDC_CLIENT_ID. */
  clientId: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** GATEWAY_OIDC_CLIENT_SECRET: a confidential client (client_secret_basic); absent, a public client with PKCE alone. */
  clientSecret: v.optional(v.pipe(v.string(), v.minLength(1))),
  /** GATEWAY_OIDC_REDIRECT_URI: this gateway's callback as registered at the provider, `https://<host>/v1/auth/sso/callback`. */
  redirectUri: v.optional(Url('the callback, …/v1/auth/sso/callback')),
  /** Scopes asked for. Default `openid email profile`. */
  scopes: v.optional(v.array(v.pipe(v.string(), v.regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'must be an OAuth scope'))), ['openid', 'email', 'profile']),
  /** Longest session, in seconds, whatever the organisation allows. Default 12 hours. */
  sessionTtlS: v.optional(v.pipe(v.number(), v.integer(), v.minValue(60)), 43_200),
  /** `create` (default): a person signing in for the first time gets a user (with no workspace until added); `refuse`: only known people sign in. */
  newUsers: v.optional(v.picklist(['create', 'refuse']), 'create'),
  /** Email domains allowed to sign in (`example.com`); default any the provider vouches for. */
  allowedDomains: v.optional(v.array(v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]+$/, 'must be a domain')))),
  /** Allow an http:// issuer. Only for a provider on this machine during development; never in production. */
  allowHttpIssuer: v.optional(v.boolean(), false),
  /** How long one request to the provider may take, in ms. Default 10 000. */
  timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100)), 10_000),
  /** Clock, for tests. */
  now: v.optional(v.custom<() => number>((f) => typeof f === 'function', 'must be a function')),
});

export type SsoOptions = v.InferInput<typeof OptionsSchema>;

/** What the session tap leaves for the routes: the session and its CSRF token. */
interface SessionState {
  session: SessionEntry;
  csrf: string;
  workspaces: readonly UserWorkspace[];
}
const SESSION = stateKey<SessionState>(PLUGIN_NAME);

/**
 * The CSRF token of a session: derived from its secret (so nothing more is
 * stored), and safe to show to scripts (it reveals nothing of the secret).
 */
function csrfToken(secret: string): string {
  return createHash('sha256').update(`csrf\n${secret}`).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const unauthorized = (message: string) => new GatewayError('unauthorized', message, { param: null });
const forbidden = (message: string, param: string | null = null) => new GatewayError('forbidden', message, { param });

/** The gateway error somewhere in an error's `cause` chain (the upstream client's, under the OIDC library's), or null. */
function causeOf(err: unknown): GatewayError | null {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof GatewayError) return e;
  }
  return null;
}

/** A path on this gateway to go back to after signing in; anything else (another site, `//host`) is refused. */
function safeReturn(value: string | null): string | null {
  if (value === null || value === '') return null;
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\') || value.length > 2000 || /[\u0000-\u001f]/.test(value)) {
    throw new GatewayError('invalid_request', "'return_to' must be a path on this gateway, starting with a single '/'.", { param: 'return_to' });
  }
  return value;
}

/**
 * OpenID Connect single sign-on for people (the dashboard and the admin API):
 * `GET /v1/auth/sso/login` sends the browser to the identity provider
 * (authorization code with PKCE), `GET /v1/auth/sso/callback` verifies the ID
 * token, matches or creates the user by email and starts a session (an
 * HttpOnly cookie), `POST /v1/auth/logout` ends it, `GET /v1/auth/whoami`
 * says who the caller is. A session acts in one of the person's workspaces
 * with the role they hold there, for at most the organisation's
 * `session_settings.max_session_ttl`. Keeps its sessions beside identity's
 * tables; users and their workspaces come from the `control-plane` plugin
 * (`IDENTITY`, `IDENTITY_ADMIN`), listed before it. See docs/sso.md.
 */
export function sso(options: SsoOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  const configured = opts.issuer !== undefined;
  if (configured && (opts.clientId === undefined || opts.redirectUri === undefined)) {
    throw new Error(`Invalid options for ${PLUGIN_NAME}: with an issuer, clientId and redirectUri are required (GATEWAY_OIDC_CLIENT_ID, GATEWAY_OIDC_REDIRECT_URI)`);
  }
  if (configured && !opts.allowHttpIssuer && !opts.issuer!.startsWith('https://')) {
    throw new Error(`Invalid options for ${PLUGIN_NAME}: issuer must be an https:// URL (allowHttpIssuer is for a local development provider only)`);
  }
  const now = opts.now ?? Date.now;
  const secure = opts.redirectUri?.startsWith('https://') ?? true;
  // `__Host-` binds the cookie to this exact host over https (no Domain, Path=/), so a sibling subdomain cannot plant one.
  const sessionCookie = secure ? '__Host-gw_session' : 'gw_session';
  const loginCookie = secure ? '__Secure-gw_sso_login' : 'gw_sso_login';
  return {
    name: PLUGIN_NAME,
    requires: [IDENTITY, IDENTITY_ADMIN],
    uses: [ACCOUNT_STATUS],
    provides: [SIGN_IN_SESSIONS],
    state: [
      { name: 'sessions', scope: 'credential', keyedBy: 'Sign-in sessions, by the digest of their cookie secret.' },
    ],
    apply(api) {
      const base = api.options.basePath;
      let identity: Identity | undefined;
      let people: IdentityAdmin | undefined;
      let sessions: Sessions | undefined;
      const oidc = configured
        ? new OidcClient(
            { issuer: opts.issuer!, clientId: opts.clientId!, clientSecret: opts.clientSecret, redirectUri: opts.redirectUri!, scopes: opts.scopes, allowHttp: opts.allowHttpIssuer, timeoutMs: opts.timeoutMs },
            policyFetch(api.upstream),
          )
        : null;
      // SCIM ends a deactivated person's sessions with the rest of their access.
      api.provide(SIGN_IN_SESSIONS, { endAll: endAllSessions });
      api.onReady(async () => {
        identity = api.resolve(IDENTITY);
        people = api.resolve(IDENTITY_ADMIN);
        await migrate(identity.sql(), SSO_NAMESPACE, SSO_MIGRATIONS);
        sessions = new Sessions(identity, people, api.tryResolve(ACCOUNT_STATUS));
      });

      /** The longest a session may live now: this plugin's bound and the organisation's max_session_ttl, whichever is shorter (seconds). */
      const ttlSeconds = async (): Promise<number> => {
        const org = (await identity!.settings()).session_settings.max_session_ttl;
        return org === null ? opts.sessionTtlS : Math.min(org, opts.sessionTtlS);
      };

      // A session cookie authenticates only a request that carries no key: a wrong key is never rescued by a cookie.
      // Without single sign-on configured, no session is accepted (turning it off ends every session).
      if (configured) {
        // Never on a WebSocket handshake: a browser sends the cookie with a socket any page of the site opens, and a
        // handshake is a GET, which the CSRF token does not guard (cross-site WebSocket hijacking).
        api.hooks.auth.tapPromise({ name: PLUGIN_NAME, stage: STAGES.auth.SESSIONS, routes: (route) => route.upgrade !== true }, async (ctx: RequestContext) => {
          if (ctx.header('x-gateway-api-key') !== undefined) return undefined;
          const secret = readCookie(ctx.header('cookie'), sessionCookie);
          if (secret === undefined || !secret.startsWith(SESSION_PREFIX) || secret.length > 128) return undefined;
          return authenticateSession(ctx, secret);
        });
      }

      const authenticateSession = async (ctx: RequestContext, secret: string): Promise<AuthInfo> => {
        const session = await sessions!.find(secret);
        if (session === null) throw unauthorized('This session has ended or is unknown; sign in again (GET /v1/auth/sso/login).');
        const current = now();
        const org = (await identity!.settings()).session_settings.max_session_ttl;
        // The organisation's setting applies to sessions started before it was lowered, too.
        const end = org === null ? session.expiresAt : Math.min(session.expiresAt, session.createdAt + org * 1000);
        if (current >= end) {
          throw unauthorized(
            `Session expired: it started at ${new Date(session.createdAt).toISOString()} and ended at ${new Date(end).toISOString()}${org === null ? '' : ` (max_session_ttl ${org} s)`}. Sign in again (GET /v1/auth/sso/login).`,
          );
        }
        if (!session.active) throw unauthorized('This account is deactivated.');
        const csrf = csrfToken(secret);
        // A cookie rides along with any request the browser makes, a cross-site form post included: changes need the token too.
        if (!SAFE_METHODS.has(ctx.method)) {
          const sent = ctx.header(CSRF_HEADER);
          if (sent === undefined || !sameText(sent, csrf)) {
            throw forbidden(`A request made with the session cookie that changes anything needs the ${CSRF_HEADER} header (its value is csrf_token in GET /v1/auth/whoami).`, CSRF_HEADER);
          }
        }
        const workspaces = await people!.userWorkspaces(session.userId);
        ctx.set(SESSION, { session, csrf, workspaces });
        const named = ctx.header('x-gateway-workspace');
        let membership: UserWorkspace | undefined;
        if (named !== undefined && named !== '') {
          membership = workspaces.find((m) => m.workspaceId === named || m.slug === named);
          if (membership === undefined) throw forbidden(`You are not a member of the workspace "${named.slice(0, 64)}".`, 'x-gateway-workspace');
        } else membership = workspaces[0];
        const base = { keyId: `session:${session.id}`, type: 'session', userId: session.userId };
        if (membership === undefined) {
          // A route check inside the tap, not a route filter: the session authenticates on every route, and only what it grants differs.
          if (ctx.route !== null && MEMBERLESS_ROUTES.has(ctx.route.name)) return Object.freeze({ ...base, workspaceId: NO_WORKSPACE, scopes: Object.freeze([]), role: 'none' });
          throw forbidden('You are not a member of any workspace yet: ask an admin to add you (or your group, through SCIM).');
        }
        const scopes = people!.roleScopes(membership.role);
        // As above: the session is accepted on every route; provider routes also need the role's completions.write.
        if (ctx.route?.kind === 'provider' && !hasScope(scopes, 'completions.write')) {
          throw forbidden(`Your role lacks the "completions.write" scope needed for ${ctx.method} ${ctx.path}.`);
        }
        return Object.freeze({ ...base, workspaceId: membership.workspaceId, scopes, role: membership.role });
      };

      const notConfigured = () =>
        new GatewayError('not_found', 'Single sign-on is not configured on this gateway (set GATEWAY_OIDC_ISSUER, GATEWAY_OIDC_CLIENT_ID and GATEWAY_OIDC_REDIRECT_URI).', { param: null });

      // Public: a sign-in page (the dashboard) asks whether to offer single sign-on before anyone is signed in.
      api.routes.add({
        name: 'auth.sso.config',
        method: 'GET',
        path: `${base}/auth/sso/config`,
        kind: 'handler',
        auth: false,
        body: 'none',
        doc: {
          summary: 'Whether single sign-on is offered',
          tags: [SSO_TAG],
          public: true,
          response: v.strictObject({ object: v.literal('sso_config'), enabled: v.boolean(), login_url: v.nullable(v.string()) }),
        },
        handler: () => jsonResponse(200, { object: 'sso_config', enabled: oidc !== null, login_url: oidc === null ? null : `${base}/auth/sso/login` }),
      });

      api.routes.add({
        name: 'auth.sso.login',
        method: 'GET',
        path: `${base}/auth/sso/login`,
        doc: {
          summary: 'Sign in with single sign-on',
          description: 'Redirects the browser (302) to the identity provider (OpenID Connect). `return_to`, a path on this gateway, is where the callback lands.',
          tags: [SSO_TAG],
          public: true,
          query: v.object({ return_to: v.optional(v.pipe(v.string(), v.description('A path on this gateway to land on after signing in.'))) }),
          responseTypes: [],
        },
        kind: 'handler',
        auth: false,
        body: 'none',
        async handler(ctx) {
          if (oidc === null) throw notConfigured();
          const q = new URLSearchParams(ctx.query);
          const returnTo = safeReturn(q.get('return_to'));
          let start: Awaited<ReturnType<OidcClient['start']>>;
          try {
            start = await oidc.start();
          } catch (err) {
            // The outbound host policy's 400 (or a timeout) comes back wrapped by the library: answer it as it is.
            const gatewayError = causeOf(err);
            if (gatewayError !== null) throw gatewayError;
            api.logger.warn({ code: failureCode(err), issuer: opts.issuer }, 'single sign-on: the identity provider could not be discovered');
            throw new GatewayError('upstream_unreachable', `The identity provider (${opts.issuer}) could not be reached or its discovery document is invalid (${failureCode(err)}).`);
          }
          // The login's secrets ride in a sealed, short-lived cookie: any instance can finish it, and only this browser can.
          const sealed = identity!.box.seal(JSON.stringify({ s: start.state, n: start.nonce, v: start.verifier, r: returnTo, e: now() + LOGIN_TTL_S * 1000 }), 'sso-login');
          return {
            status: 302,
            headers: { location: start.url, 'cache-control': 'no-store', 'set-cookie': setCookie(loginCookie, sealed, { path: `${base}/auth/sso`, maxAge: LOGIN_TTL_S, secure }) },
            body: '',
            observers: null,
          };
        },
      });

      api.routes.add({
        name: 'auth.sso.callback',
        method: 'GET',
        path: `${base}/auth/sso/callback`,
        doc: {
          summary: 'Finish single sign-on',
          description: "Where the identity provider sends the browser back: sets the session cookie, then redirects to `return_to`, or answers the session with its CSRF token (send it as `x-gateway-csrf` on the session's writes).",
          tags: [SSO_TAG],
          public: true,
        },
        kind: 'handler',
        auth: false,
        // The answer holds the session's CSRF token; its query, a one-time code.
        sensitive: true,
        body: 'none',
        async handler(ctx) {
          if (oidc === null) throw notConfigured();
          const q = new URLSearchParams(ctx.query);
          const error = q.get('error');
          if (error !== null) throw unauthorized(`The identity provider refused the sign-in: ${error.slice(0, 64)}.`);
          const raw = readCookie(ctx.header('cookie'), loginCookie);
          let login: { s: string; n: string; v: string; r: string | null; e: number } | null = null;
          try {
            login = raw === undefined ? null : JSON.parse(identity!.box.open(raw, 'sso-login'));
          } catch {
            login = null;
          }
          if (login === null || login.e < now()) {
            throw new GatewayError('invalid_request', 'This sign-in was not started from this browser, or took longer than 10 minutes: start again at GET /v1/auth/sso/login.', { param: null });
          }
          let claims: Record<string, unknown>;
          try {
            claims = await oidc.finish(ctx.query, { state: login.s, nonce: login.n, verifier: login.v });
          } catch (err) {
            const code = failureCode(err);
            api.logger.warn({ code }, 'single sign-on: a sign-in was refused');
            throw unauthorized(`Sign-in failed: the identity provider's answer could not be verified (${code}).`);
          }
          const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
          if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) throw forbidden('The identity provider gave no email address for this account (ask for the "email" scope and claim).');
          if (claims.email_verified === false) throw forbidden(`The identity provider says ${email} is not verified.`);
          const domain = email.slice(email.lastIndexOf('@') + 1);
          if (opts.allowedDomains !== undefined && !opts.allowedDomains.includes(domain)) throw forbidden(`Accounts of ${domain} may not sign in to this gateway.`);

          const current = now();
          let user = await people!.userByEmail(email);
          if (user === null) {
            if (opts.newUsers === 'refuse') throw forbidden(`No user ${email} is known to this gateway; ask an admin to add you.`);
            user = await people!.createUser(email, typeof claims.name === 'string' ? claims.name.slice(0, 200) : null);
          }
          if (!(await sessions!.mayStart(user.id))) throw forbidden('This account is deactivated.');

          const ttl = await ttlSeconds();
          const secret = await sessions!.start({
            userId: user.id,
            issuer: String(claims.iss ?? opts.issuer).slice(0, 512),
            subject: String(claims.sub ?? '').slice(0, 512),
            now: current,
            ttlS: ttl,
          });
          api.logger.info({ user_id: user.id }, 'single sign-on: a session started');
          const cookies = [setCookie(sessionCookie, secret, { path: '/', maxAge: ttl, secure }), setCookie(loginCookie, '', { path: `${base}/auth/sso`, maxAge: 0, secure })];
          if (login.r !== null) return { status: 302, headers: { location: login.r, 'cache-control': 'no-store', 'set-cookie': cookies }, body: '', observers: null };
          const res = jsonResponse(200, {
            object: 'session',
            user: { id: user.id, email: user.email, name: user.name },
            expires_at: new Date(current + ttl * 1000).toISOString(),
            csrf_token: csrfToken(secret),
          });
          res.headers['set-cookie'] = cookies;
          res.headers['cache-control'] = 'no-store';
          return res;
        },
      });

      api.routes.add({
        name: 'auth.logout',
        method: 'POST',
        path: `${base}/auth/logout`,
        doc: {
          summary: 'Sign out',
          description: "Ends the session of the sign-in cookie (API keys are deleted or disabled instead); the answer names the identity provider's end-session URL.",
          tags: [SSO_TAG],
        },
        kind: 'handler',
        body: 'raw',
        async handler(ctx): Promise<GatewayResponse> {
          const state = ctx.get(SESSION);
          if (state === undefined) throw new GatewayError('invalid_request', 'Only a session (the sign-in cookie) can log out; API keys are deleted or disabled instead.', { param: null });
          await sessions!.end(state.session.id);
          const res = jsonResponse(200, { object: 'session', logged_out: true, end_session_url: oidc === null ? null : await oidc.endSessionUrl() });
          res.headers['set-cookie'] = setCookie(sessionCookie, '', { path: '/', maxAge: 0, secure });
          return res;
        },
      });

      api.routes.add({
        name: 'auth.whoami',
        method: 'GET',
        path: `${base}/auth/whoami`,
        doc: {
          summary: 'Who is calling',
          description: 'The key or the signed-in session behind the request: its role, scopes and workspaces (a session also its CSRF token and expiry).',
          tags: [SSO_TAG],
        },
        kind: 'handler',
        sensitive: true,
        body: 'none',
        async handler(ctx): Promise<GatewayResponse> {
          const auth = ctx.auth;
          const state = ctx.get(SESSION);
          if (state !== undefined) {
            const s = state.session;
            const org = (await identity!.settings()).session_settings.max_session_ttl;
            const end = org === null ? s.expiresAt : Math.min(s.expiresAt, s.createdAt + org * 1000);
            return jsonResponse(200, {
              object: 'whoami',
              type: 'session',
              user: { id: s.userId, email: s.email, name: s.name },
              session: { created_at: new Date(s.createdAt).toISOString(), expires_at: new Date(end).toISOString() },
              csrf_token: state.csrf,
              workspace_id: auth?.workspaceId === NO_WORKSPACE ? null : (auth?.workspaceId ?? null),
              role: auth?.role === 'none' ? null : (auth?.role ?? null),
              scopes: auth?.scopes ?? [],
              workspaces: state.workspaces.map((m) => ({ id: m.workspaceId, slug: m.slug, name: m.name, role: m.role })),
            });
          }
          return jsonResponse(200, {
            object: 'whoami',
            type: auth?.type ?? 'static',
            key_id: auth?.keyId ?? null,
            user_id: auth?.userId ?? null,
            workspace_id: auth?.workspaceId ?? null,
            role: auth?.role ?? null,
            scopes: auth?.scopes ?? [],
          });
        },
      });
    },
  };
}

export default sso;
