import { hash } from 'node:crypto';
import { parseOptions, STAGES, type AuthInfo, type GatewayPlugin } from '../../sdk/index.js';
import { StaticAuthOptionsSchema, type StaticAuthOptions } from './schema.js';

export const PLUGIN_NAME = 'auth-static';

export type { StaticAuthOptions };

/**
 * Static gateway keys, sent as `x-gateway-api-key`. Keys are held only as
 * SHA-256 digests; the log sees a short digest prefix as the key id.
 * Stored keys (control plane) tap the same hook later (`STAGES.auth.STORED_KEYS`),
 * and single sign-on sessions after them (`STAGES.auth.SESSIONS`): a request
 * without a key passes on to them.
 */
export function staticAuth(options: StaticAuthOptions): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, StaticAuthOptionsSchema, options);
  const known = new Map<string, AuthInfo>();
  for (const key of opts.keys) {
    const digest = sha256(key);
    known.set(digest, Object.freeze({ keyId: `static:${digest.slice(0, 12)}`, workspaceId: null, scopes: Object.freeze(['*']), role: 'admin', type: 'static' }));
  }
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      api.hooks.auth.tap({ name: PLUGIN_NAME, stage: STAGES.auth.MEMORY_KEYS }, (ctx) => {
        const key = ctx.header('x-gateway-api-key');
        // No key: not a refusal. A later source may accept the request (a single sign-on session cookie); when none
        // does, the pipeline answers the one 401 ("Missing gateway API key").
        if (key === undefined || key === '') return undefined;
        return known.get(sha256(key));
      });
    },
  };
}

function sha256(value: string): string {
  // The one-shot hash: a third of createHash's cost, on every request.
  return hash('sha256', value, 'hex');
}

export default staticAuth;
