import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';

/**
 * Version of the plugin API: the plugin contract, the hooks, the registries
 * and the SDK exports. A major bump means a plugin written for the previous
 * one may no longer work; plugins state the range they need in `gatewayApi`.
 */
export const GATEWAY_API_VERSION = '2.0.0';

/** What each major version changed, told to a plugin written for the one before. */
const CHANGED: Record<number, string> = {
  2: 'UpstreamResponse.body is no longer a Readable; see docs/plugins.md, "Upstream bodies"',
};

/** Throws when a plugin's `gatewayApi` range is not a valid semver range or does not include {@link GATEWAY_API_VERSION}. */
export function checkGatewayApi(plugin: string, range: string | undefined): void {
  if (range === undefined) return;
  if (typeof range !== 'string' || validRange(range) === null) throw new Error(`plugin "${plugin}": gatewayApi "${String(range)}" is not a semver range (e.g. ^2.0.0)`);
  if (!satisfies(GATEWAY_API_VERSION, range)) {
    const major = Number(GATEWAY_API_VERSION.split('.')[0]);
    const before = satisfies(`${major - 1}.999.999`, range) ? CHANGED[major] : undefined;
    const hint = before === undefined ? '' : ` (${major}.0: ${before})`;
    throw new Error(`plugin "${plugin}" needs gateway plugin API ${range}, but this gateway provides ${GATEWAY_API_VERSION}${hint}`);
  }
}
