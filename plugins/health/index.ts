import { type GatewayPlugin, jsonResponse, type RouteDoc, v } from '../../sdk/index.js';

export const PLUGIN_NAME = 'health';

const DOC: RouteDoc = {
  summary: 'Liveness',
  description: 'Answers 200 while the gateway serves requests; for load balancers and orchestrators.',
  tags: ['Health'],
  public: true,
  response: v.strictObject({ status: v.literal('ok') }),
};

/** `GET /health`: 200 with no auth, for load balancers and orchestrators. */
export function health(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const body = { status: 'ok' };
      api.routes.add({ name: 'health', method: 'GET', path: '/health', auth: false, body: 'none', kind: 'handler', doc: DOC, handler: () => jsonResponse(200, body) });
    },
  };
}

export default health;
