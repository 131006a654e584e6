import type { CreateGatewayOptions } from '../../core/index.js';
import { startTestGateway, type TestGateway } from '../../server/testing/harness.js';

/**
 * Serves a gateway built from exactly these plugins (no server config, none of the kit's bundled ones
 * around them) on an ephemeral port; loopback upstreams allowed unless `options.outbound` says otherwise.
 * The kit's harness, as plugin packages use it.
 */
export function serveGateway(init: Omit<CreateGatewayOptions, 'logger'>): Promise<TestGateway> {
  return startTestGateway({ ...init, plugins: [...init.plugins], around: 'none', waitForReady: false });
}
