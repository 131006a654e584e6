/**
 * Test gateways send their upstream calls to mocks on loopback, which the
 * outbound host policy refuses by default. The helpers allow loopback by name
 * and address (and nothing else: private ranges stay refused), the way an
 * operator allows a self-hosted model; a test of the policy passes its own.
 */
export { LOOPBACK_HOSTS } from '../../server/testing/harness.js';
import { LOOPBACK_HOSTS } from '../../server/testing/harness.js';

/** The same allow-list, for the bundled server's environment. */
export const LOOPBACK_ENV: Readonly<Record<string, string>> = Object.freeze({ GATEWAY_ALLOW_HOSTS: LOOPBACK_HOSTS.join(',') });
