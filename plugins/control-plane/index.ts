import * as v from 'valibot';
import {
  GatewayError,
  type GatewayPlugin,
  hasScope,
  migrate,
  parseOptions,
  type RequestContext,
  type SqlClient,
  type SqlStore,
  STAGES,
  TENANCY,
} from '../../sdk/index.js';
import { IDENTITY, IDENTITY_ADMIN, requestWorkspaceOf } from '../../sdk/admin/index.js';
import { bootstrap } from './bootstrap.js';
import { authenticateJwt, DEFAULT_CLAIMS } from './jwt-auth.js';
import { createJwtVerifier, loadJwksFile, looksLikeJwt, type JwtVerifier } from './jwt.js';
import { IDENTITY_MIGRATIONS, IDENTITY_NAMESPACE } from './migrations.js';
import { People } from './people.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { toRouteDefinitions } from './routes/http.js';
import { memberRoutes } from './routes/members.js';
import { organisationRoutes } from './routes/organisation.js';
import { workspaceRoutes } from './routes/workspaces.js';
import { createSecretBox, loadEncryptionKey, type SecretBox } from './secret-box.js';
import { ControlPlane } from './service.js';

export const PLUGIN_NAME = 'control-plane';
export { ControlPlane } from './service.js';
export { ALL_SCOPES, ROLE_SCOPES } from './scopes.js';

const JwtOptions = v.strictObject({
  /** PEM public keys (SPKI or certificates), with optional `kid`. */
  publicKeys: v.optional(v.array(v.strictObject({ kid: v.optional(v.string()), pem: v.string() }))),
  /** A JWKS file, read at start. */
  jwksFile: v.optional(v.string()),
  issuer: v.optional(v.union([v.string(), v.array(v.string())])),
  audience: v.optional(v.union([v.string(), v.array(v.string())])),
  algorithms: v.optional(v.array(v.picklist(['RS256', 'ES256']))),
  clockToleranceS: v.optional(v.pipe(v.number(), v.minValue(0))),
  /** Claim names: `workspace` (id or slug, required), `scopes`, `role`, `subject`. */
  claims: v.optional(v.strictObject({ workspace: v.optional(v.string()), scopes: v.optional(v.string()), role: v.optional(v.string()), subject: v.optional(v.string()) })),
});

const OptionsSchema = v.strictObject({
  /** The SQL store in `api.stores` (registered by the `sqlite` or `postgres` plugin). Default `sql`. */
  store: v.optional(v.string(), 'sql'),
  /** Where the generated encryption key file lives (the server passes GATEWAY_DATA_DIR). */
  dataDir: v.optional(v.string(), './data'),
  /** GATEWAY_ENCRYPTION_KEY: 32 bytes as 64 hex or base64. Without it, `<dataDir>/encryption.key` (mode 0600) is used, generated on first start. */
  encryptionKey: v.optional(v.string()),
  /** GATEWAY_BOOTSTRAP_KEY: the first admin key, used only when the control plane is empty. */
  bootstrapKey: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))),
  /** How long the request path trusts a cached key, slug, config or workspace, in ms. Default 10 000. */
  cacheTtlMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 10_000),
  /** Serve the admin API (`/v1/workspaces`, `/v1/api-keys`, …). Default true. */
  routes: v.optional(v.boolean(), true),
  /** JWT authentication: tokens sent as `x-gateway-api-key`. Off unless keys are configured. */
  jwt: v.optional(JwtOptions),
  /** Clock, for tests. */
  now: v.optional(v.custom<() => number>((f) => typeof f === 'function', 'must be a function')),
  /** Where the generated first admin key is printed. Default stderr. */
  announce: v.optional(v.custom<(text: string) => void>((f) => typeof f === 'function', 'must be a function')),
});

export type ControlPlaneOptions = v.InferInput<typeof OptionsSchema>;

/**
 * The control plane: identity. The organisation and its settings, workspaces,
 * members and users, stored API keys (and JWTs) for auth, the encryption key,
 * and the admin API that manages them. Features that keep state per workspace
 * (configs, guardrails, prompts, limits, integrations, MCP servers, agents,
 * single sign-on, SCIM) are plugins of their own that build on it through
 * `IDENTITY` and `IDENTITY_ADMIN` (sdk/admin).
 * Needs an SQL store plugin (`sqlite` or `postgres`) listed before it.
 * See docs/admin-api.md.
 */
export function controlPlane(options: ControlPlaneOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  if (opts.jwt !== undefined && !opts.jwt.publicKeys?.length && opts.jwt.jwksFile === undefined) {
    throw new Error(`Invalid options for ${PLUGIN_NAME}: jwt: needs publicKeys or jwksFile`);
  }
  const claims = { ...DEFAULT_CLAIMS, ...(opts.jwt?.claims ?? {}) };
  return {
    name: PLUGIN_NAME,
    provides: [IDENTITY, IDENTITY_ADMIN, TENANCY],
    state: [
      { name: 'identity', scope: 'credential', keyedBy: 'API keys as the request path reads them, by the digest of their secret; workspaces and members by id.' },
    ],
    apply(api) {
      let client: SqlClient | null = null;
      let box: SecretBox | null = null;
      let verify: JwtVerifier | null = null;
      const cp = new ControlPlane({
        db: () => client!,
        box: () => box!,
        now: opts.now ?? Date.now,
        cacheTtlMs: opts.cacheTtlMs,
        adminRoutes: opts.routes,
        secretFields: api.targetFields.credentials(),
        upstream: () => api.upstream,
      });
      // Workspaces, the store and the encryption key, for the features that keep state per workspace (sdk/admin).
      api.provide(IDENTITY, cp);
      // Users, memberships and user keys, for the features that sign people in or provision them (sso, scim).
      api.provide(IDENTITY_ADMIN, new People(cp));
      // The workspace a request acts in, which every plugin keeping state between requests keys it by (sdk/tenancy.ts).
      api.provide(TENANCY, { workspaceOf: (ctx) => requestWorkspaceOf(ctx, cp) });

      api.onReady(async () => {
        const store = api.stores.get(opts.store) as SqlStore | undefined;
        if (store === undefined || typeof store.client !== 'function') {
          throw new Error(`${PLUGIN_NAME}: needs an SQL store named "${opts.store}": list the sqlite or postgres plugin before it`);
        }
        client = store.client();
        await migrate(client, IDENTITY_NAMESPACE, IDENTITY_MIGRATIONS);
        const key = await loadEncryptionKey({ envValue: opts.encryptionKey, dataDir: opts.dataDir });
        box = createSecretBox(key.key);
        if (key.source === 'generated') api.logger.warn({ file: key.file }, 'generated an encryption key for integration secrets; back it up, or set GATEWAY_ENCRYPTION_KEY');
        await bootstrap(cp, { bootstrapKey: opts.bootstrapKey, announce: opts.announce ?? ((text) => process.stderr.write(text)), logger: api.logger });
        if (opts.jwt !== undefined) {
          const jwks = opts.jwt.jwksFile === undefined ? undefined : await loadJwksFile(opts.jwt.jwksFile);
          verify = createJwtVerifier({
            publicKeys: opts.jwt.publicKeys,
            jwks,
            issuer: opts.jwt.issuer,
            audience: opts.jwt.audience,
            algorithms: opts.jwt.algorithms,
            clockToleranceS: opts.jwt.clockToleranceS,
            requiredClaims: [claims.workspace],
            now: cp.now,
          });
        }
      });

      // After the static keys (an in-memory map): only keys they do not know reach the store.
      api.hooks.auth.tapPromise({ name: PLUGIN_NAME, stage: STAGES.auth.STORED_KEYS }, async (ctx: RequestContext) => {
        const secret = ctx.header('x-gateway-api-key');
        if (secret === undefined || secret === '') return undefined;
        const auth = verify !== null && looksLikeJwt(secret) ? await authenticateJwt(cp, verify, claims, secret) : await cp.authenticate(secret, ctx);
        if (auth === undefined) return undefined;
        // Checked here rather than by a route filter: the key authenticates on every route; only provider routes need this scope.
        if (ctx.route?.kind === 'provider' && !hasScope(auth.scopes, 'completions.write')) {
          throw new GatewayError('forbidden', `This API key lacks the "completions.write" scope needed for ${ctx.method} ${ctx.path}.`, { param: 'x-gateway-api-key' });
        }
        return auth;
      });


      if (opts.routes) {
        const routes = [
          ...organisationRoutes,
          ...workspaceRoutes,
          ...memberRoutes,
          ...apiKeyRoutes,
        ];
        for (const route of toRouteDefinitions(api.options.basePath, routes, () => cp)) api.routes.add(route);
      }
    },
  };
}

export default controlPlane;
