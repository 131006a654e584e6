import { type GatewayPlugin, jsonResponse, type RouteDoc, v } from '../../sdk/index.js';

export const PLUGIN_NAME = 'health';

const DOC: RouteDoc = {
  summary: 'Liveness',
  description: 'Answers 200 while the gateway serves requests; for load balancers and orchestrators.',
  tags: ['Health'],
  public: true,
  response: v.strictObject({ status: v.literal('ok') }),
};

const READY_DOC: RouteDoc = {
  summary: 'Readiness',
  description:
    'Answers 200 while the gateway wants traffic, 503 `{"status":"draining"}` once it is being taken out of rotation (on SIGTERM, ' +
    "for the server's `readinessDrainMs`, before its listener closes; requests are still served meanwhile) and while it shuts down. " +
    'Until boot has finished, a probe waits for it, as every request does.',
  tags: ['Health'],
  public: true,
  response: v.strictObject({ status: v.picklist(['ready', 'draining']) }),
};

/**
 * `GET /health` (liveness): 200 with no auth while the process serves. `GET /ready` (readiness): 200 while the
 * gateway wants traffic, 503 once it is taken out of rotation (`Gateway.markUnready`, then `close`), so an
 * orchestrator stops routing to it before the listener closes. See docs/operations.md.
 */
export function health(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const body = { status: 'ok' };
      const ready = { status: 'ready' };
      const draining = { status: 'draining' };
      api.routes.add({ name: 'health', method: 'GET', path: '/health', auth: false, body: 'none', kind: 'handler', doc: DOC, handler: () => jsonResponse(200, body) });
      api.routes.add({
        name: 'health.ready',
        method: 'GET',
        path: '/ready',
        auth: false,
        body: 'none',
        kind: 'handler',
        doc: READY_DOC,
        handler: () => (api.accepting() ? jsonResponse(200, ready) : jsonResponse(503, draining, { 'retry-after': '5' })),
      });
    },
  };
}

export default health;
