import { childPath, GatewayError, pickWeighted, ROUTING, weightOf, type GatewayPlugin, type RoutingService } from '../../../sdk/index.js';

export const PLUGIN_NAME = 'strategy-loadbalance';

export interface LoadbalanceOptions {
  /** Random source in [0, 1); replace it for deterministic tests. Default Math.random. */
  random?: () => number;
}

/**
 * `mode: loadbalance`: one target per request, chosen at random in proportion to `weight`. With the
 * `routing` plugin loaded, among the targets that can take the request now (rate-limit headroom), the
 * fastest or a conversation's own when the config asks (its `ROUTING` service; docs/configuration.md#routing).
 */
export function loadbalanceStrategy(options: LoadbalanceOptions = {}): GatewayPlugin {
  const random = options.random ?? Math.random;
  return {
    name: PLUGIN_NAME,
    uses: [ROUTING],
    state: [],
    apply(api) {
      let routing: RoutingService | undefined;
      api.onReady(() => {
        routing = api.tryResolve(ROUTING);
      });
      api.strategies.add('loadbalance', {
        async execute(ctx, target, run, path) {
          const targets = target.targets ?? [];
          const weights = targets.map(weightOf);
          if (!weights.some((w) => w > 0)) throw new GatewayError('invalid_request', 'loadbalance needs at least one target with a weight above 0.', { param: 'targets' });
          if (routing === undefined) {
            const index = pickWeighted(weights, random());
            return run(ctx, targets[index]!, childPath(path, index));
          }
          const plan = await routing.plan(ctx, target, targets, path, 'loadbalance', random);
          if (plan.order.length === 0) throw plan.exhausted!;
          const index = plan.order[0]!;
          return run(ctx, targets[index]!, childPath(path, index));
        },
      });
    },
  };
}

export default loadbalanceStrategy;
