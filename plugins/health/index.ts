import { type GatewayPlugin, jsonResponse } from '../../sdk/index.js';

export const PLUGIN_NAME = 'health';

/** `GET /health`: 200 with no auth, for load balancers and orchestrators. */
export function health(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    apply(api) {
      const body = { status: 'ok' };
      api.routes.add({ name: 'health', method: 'GET', path: '/health', auth: false, body: 'none', kind: 'handler', handler: () => jsonResponse(200, body) });
    },
  };
}

export default health;
