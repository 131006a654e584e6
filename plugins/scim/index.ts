import * as v from 'valibot';
import { type GatewayPlugin, migrate, parseOptions } from '../../sdk/index.js';
import { ACCOUNT_STATUS, IDENTITY, IDENTITY_ADMIN, SIGN_IN_SESSIONS, toRouteDefinitions } from '../../sdk/admin/index.js';
import { scimAdminRoutes } from './admin.js';
import { SCIM_MIGRATIONS, SCIM_NAMESPACE } from './migrations.js';
import { scimRoutes } from './service.js';
import { hashSecret, Scim } from './store.js';

export const PLUGIN_NAME = 'scim';

const OptionsSchema = v.strictObject({
  /** GATEWAY_SCIM_TOKEN: a bearer token identity providers may use besides the ones created with POST /v1/scim/tokens. */
  token: v.optional(v.pipe(v.string(), v.minLength(32, 'must be at least 32 characters (it is a bearer secret)'))),
  /** Where the SCIM service is served. Default `/scim/v2`. */
  path: v.optional(v.pipe(v.string(), v.regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a path such as /scim/v2')), '/scim/v2'),
  /** The gateway's public URL (`https://gateway.example.com`), for the `meta.location` of resources; relative without it. */
  publicUrl: v.optional(v.pipe(v.string(), v.regex(/^(?:https?:\/\/[^/?#\s]+)?$/, 'must be an http(s) origin without a path')), ''),
});

export type ScimOptions = v.InferInput<typeof OptionsSchema>;

/**
 * SCIM 2.0 provisioning (RFC 7643/7644) for identity providers such as Okta
 * and Microsoft Entra: users and groups under `/scim/v2`, authenticated with
 * SCIM bearer tokens, and the admin routes `/v1/scim/workspaces` (group →
 * workspace mappings) and `/v1/scim/tokens`. A user in a mapped group is a
 * member of the workspace with the mapped role. Keeps its tables beside
 * identity's and changes users, memberships and user keys through the
 * `control-plane` plugin's `IDENTITY_ADMIN`; tells the `sso` plugin who is
 * deactivated (`ACCOUNT_STATUS`) and ends their sessions (`SIGN_IN_SESSIONS`,
 * when `sso` is loaded). See docs/sso.md.
 */
export function scim(options: ScimOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    provides: [ACCOUNT_STATUS],
    requires: [IDENTITY, IDENTITY_ADMIN],
    uses: [SIGN_IN_SESSIONS],
    state: [
      { name: 'directory', scope: 'organisation', keyedBy: "The organisation's users and groups, reached with an organisation-wide SCIM token only." },
    ],
    apply(api) {
      let state: Scim | undefined;
      api.onReady(async () => {
        const identity = api.resolve(IDENTITY);
        await migrate(identity.sql(), SCIM_NAMESPACE, SCIM_MIGRATIONS);
        state = new Scim(identity, api.resolve(IDENTITY_ADMIN), api.tryResolve(SIGN_IN_SESSIONS), api.logger);
      });
      // A person SCIM deactivated (or deleted and provisioned again, inactive) may not sign in.
      api.provide(ACCOUNT_STATUS, {
        async deactivated(userId) {
          const row = await state!.db().get<{ active: number | string }>('SELECT active FROM cp_scim_users WHERE user_id = ?', [userId]);
          return row !== undefined && Number(row.active) !== 1;
        },
      });
      const service = scimRoutes({ prefix: opts.path, publicUrl: opts.publicUrl, envTokenDigest: opts.token === undefined ? null : hashSecret(opts.token), scim: () => state! });
      for (const route of service) api.routes.add(route);
      for (const route of toRouteDefinitions(api.options.basePath, scimAdminRoutes, () => state!)) api.routes.add(route);
    },
  };
}

export default scim;
