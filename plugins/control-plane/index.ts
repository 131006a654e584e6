import { join } from 'node:path';
import * as v from 'valibot';
import {
  CONFIG_PARSER,
  CONFIG_SOURCE,
  type ConfigParser,
  type ConfigSource,
  GatewayError,
  type GatewayPlugin,
  GUARDRAIL_SOURCE,
  GUARDRAIL_VALIDATOR,
  type GuardrailValidator,
  hasScope,
  LIMIT_COUNTERS,
  LIMIT_POLICY_SOURCE,
  type LimitCounters,
  migrate,
  parseOptions,
  PROMPT_SOURCE,
  PROMPT_TEMPLATES,
  type PromptTemplates,
  PROVIDER_SOURCE,
  type ProviderSource,
  type RequestContext,
  serviceToken,
  type SqlClient,
  type SqlStore,
  STAGES,
} from '../../sdk/index.js';
import { IDENTITY } from '../../sdk/admin/index.js';
import { bootstrap } from './bootstrap.js';
import { authenticateJwt, DEFAULT_CLAIMS } from './jwt-auth.js';
import { createJwtVerifier, loadJwksFile, looksLikeJwt, type JwtPayload } from './jwt.js';
import { FEATURE_TABLES } from './feature-tables.js';
import { IDENTITY_MIGRATIONS, IDENTITY_NAMESPACE } from './migrations.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { configRoutes } from './routes/configs.js';
import { guardrailRoutes } from './routes/guardrails.js';
import { toRouteDefinitions } from './routes/http.js';
import { integrationRoutes } from './routes/integrations.js';
import { memberRoutes } from './routes/members.js';
import { modelRoutes } from './routes/models.js';
import { organisationRoutes } from './routes/organisation.js';
import { policyRoutes } from './routes/policies.js';
import { promptRoutes } from './routes/prompts.js';
import { providerRoutes } from './routes/providers.js';
import { workspaceRoutes } from './routes/workspaces.js';
import { createSecretBox, loadEncryptionKey, type SecretBox } from './secret-box.js';
import { ControlPlane } from './service.js';

export const PLUGIN_NAME = 'control-plane';
export { ControlPlane } from './service.js';
export { ALL_SCOPES, ROLE_SCOPES } from './scopes.js';

/** Token under which the plugin provides its {@link ControlPlane}, for plugins that read stored state. */
export const CONTROL_PLANE = serviceToken<ControlPlane>('gateway.control-plane');

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
  /** Directory that `file:` secret references of integrations read from. Default `<dataDir>/secrets`. */
  secretsDir: v.optional(v.string()),
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
 * The control plane: stored API keys (and JWTs) for auth, workspaces and
 * members, integrations (sealed provider credentials), provider slugs,
 * saved configs, rate-limit and usage-limit policies (enforced by the
 * `limits` plugin), stored prompts and partials (rendered by the `prompts`
 * plugin), organisation settings and the admin API that manages them.
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
    provides: [CONTROL_PLANE, IDENTITY, PROVIDER_SOURCE, CONFIG_SOURCE, GUARDRAIL_SOURCE, LIMIT_POLICY_SOURCE, PROMPT_SOURCE],
    apply(api) {
      let client: SqlClient | null = null;
      let box: SecretBox | null = null;
      let verify: ((token: string) => JwtPayload) | null = null;
      let guardrailValidator: GuardrailValidator | undefined;
      let parser: ConfigParser | null = null;
      let counters: LimitCounters | undefined;
      let templates: PromptTemplates | undefined;
      const cp = new ControlPlane({
        db: () => client!,
        box: () => box!,
        now: opts.now ?? Date.now,
        cacheTtlMs: opts.cacheTtlMs,
        adminRoutes: opts.routes,
        secretsDir: opts.secretsDir ?? join(opts.dataDir, 'secrets'),
        parser: () => {
          if (parser === null) throw new GatewayError('service_unavailable', 'Saved configs need the config plugin, which is not loaded.');
          return parser;
        },
        secretFields: api.targetFields.credentials(),
        counters: () => counters,
        templates: () => templates,
        guardrailValidator: () => guardrailValidator,
        upstream: () => api.upstream,
      });
      api.provide(CONTROL_PLANE, cp);
      // Workspaces, the store and the encryption key, for the features that keep state per workspace (sdk/admin).
      api.provide(IDENTITY, cp);

      api.onReady(async () => {
        parser = api.tryResolve(CONFIG_PARSER) ?? null;
        counters = api.tryResolve(LIMIT_COUNTERS);
        guardrailValidator = api.tryResolve(GUARDRAIL_VALIDATOR);
        templates = api.tryResolve(PROMPT_TEMPLATES);
        const store = api.stores.get(opts.store) as SqlStore | undefined;
        if (store === undefined || typeof store.client !== 'function') {
          throw new Error(`${PLUGIN_NAME}: needs an SQL store named "${opts.store}": list the sqlite or postgres plugin before it`);
        }
        client = store.client();
        await migrate(client, IDENTITY_NAMESPACE, IDENTITY_MIGRATIONS);
        for (const feature of FEATURE_TABLES) await migrate(client, feature.namespace, feature.migrations);
        const key = await loadEncryptionKey({ envValue: opts.encryptionKey, dataDir: opts.dataDir });
        box = createSecretBox(key.key);
        if (key.source === 'generated') api.logger.warn({ file: key.file }, 'generated an encryption key for integration secrets; back it up, or set GATEWAY_ENCRYPTION_KEY');
        const sealed = await cp.sealLegacyDocuments();
        if (sealed > 0) api.logger.info({ versions: sealed }, 'sealed the credentials of saved configs and stored guardrails written before they were sealed');
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
        if (ctx.route?.kind === 'provider' && !hasScope(auth.scopes, 'completions.write')) {
          throw new GatewayError('forbidden', `This API key lacks the "completions.write" scope needed for ${ctx.method} ${ctx.path}.`, { param: 'x-gateway-api-key' });
        }
        return auth;
      });

      const providerSource: ProviderSource = {
        async find(ctx, ref, target) {
          const workspaceId = await cp.requestWorkspace(ctx);
          return workspaceId === null ? undefined : cp.providerTarget(ctx, workspaceId, ref, target);
        },
      };
      const configSource: ConfigSource = {
        async find(ctx, id) {
          const workspaceId = await cp.requestWorkspace(ctx);
          return workspaceId === null ? undefined : cp.configTarget(workspaceId, id);
        },
      };
      api.provide(PROVIDER_SOURCE, providerSource);
      api.provide(CONFIG_SOURCE, configSource);
      // Stored guardrails a config names by id or slug, in the request's workspace, for the guardrails plugin.
      api.provide(GUARDRAIL_SOURCE, {
        find(ctx, ref) {
          const own = ctx.auth?.workspaceId;
          if (own) return cp.guardrailFor(own, ref);
          return cp.requestWorkspace(ctx).then((workspaceId) => (workspaceId === null ? undefined : cp.guardrailFor(workspaceId, ref)));
        },
      });
      // The rate limits and budgets of the request's workspace, for the limits plugin.
      api.provide(LIMIT_POLICY_SOURCE, { policies: (ctx) => cp.limitPolicies(ctx) });
      // Stored prompts of the request's workspace, for the prompts plugin.
      api.provide(PROMPT_SOURCE, { find: (ctx, ref, selector) => cp.promptRelease(ctx, ref, selector) });

      if (opts.routes) {
        const routes = [
          ...organisationRoutes,
          ...workspaceRoutes,
          ...memberRoutes,
          ...apiKeyRoutes,
          ...integrationRoutes(api.providers),
          ...providerRoutes,
          ...configRoutes,
          ...guardrailRoutes,
          ...modelRoutes,
          ...policyRoutes,
          ...promptRoutes,
        ];
        for (const route of toRouteDefinitions(api.options.basePath, routes, () => cp)) api.routes.add(route);
      }
    },
  };
}

export default controlPlane;
