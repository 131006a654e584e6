import * as v from 'valibot';
import { type GatewayPlugin, parseOptions } from '../../../sdk/index.js';
import { CONTROL_PLANE } from '../index.js';
import { hashSecret } from '../keys.js';
import { toRouteDefinitions } from '../routes/http.js';
import type { ControlPlane } from '../service.js';
import { scimAdminRoutes } from './admin.js';
import { scimRoutes } from './service.js';

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
 * member of the workspace with the mapped role. Needs the `control-plane`
 * plugin listed before it. See docs/sso.md.
 */
export function scim(options: ScimOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    apply(api) {
      let cp: ControlPlane | undefined;
      api.onReady(() => {
        cp = api.tryResolve(CONTROL_PLANE);
        if (cp === undefined) throw new Error(`${PLUGIN_NAME}: needs the control-plane plugin, listed before it`);
      });
      const service = scimRoutes({ prefix: opts.path, publicUrl: opts.publicUrl, envTokenDigest: opts.token === undefined ? null : hashSecret(opts.token), cp: () => cp!, logger: api.logger });
      for (const route of service) api.routes.add(route);
      for (const route of toRouteDefinitions(api.options.basePath, scimAdminRoutes(api.logger), () => cp!)) api.routes.add(route);
    },
  };
}

export default scim;
