import satisfies from 'semver/functions/satisfies.js';
import validRange from 'semver/ranges/valid.js';

/**
 * Version of the plugin API: the plugin contract, the hooks, the registries
 * and the SDK exports. A major bump means a plugin written for the previous
 * one may no longer work; plugins state the range they need in `gatewayApi`.
 */
export const GATEWAY_API_VERSION = '1.0.0';

/** Throws when a plugin's `gatewayApi` range is not a valid semver range or does not include {@link GATEWAY_API_VERSION}. */
export function checkGatewayApi(plugin: string, range: string | undefined): void {
  if (range === undefined) return;
  if (typeof range !== 'string' || validRange(range) === null) throw new Error(`plugin "${plugin}": gatewayApi "${String(range)}" is not a semver range (e.g. ^1.0.0)`);
  if (!satisfies(GATEWAY_API_VERSION, range)) {
    throw new Error(`plugin "${plugin}" needs gateway plugin API ${range}, but this gateway provides ${GATEWAY_API_VERSION}`);
  }
}
