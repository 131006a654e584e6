import { childPath, GatewayError, type GatewayPlugin } from '../../../sdk/index.js';

export const PLUGIN_NAME = 'strategy-single';

/** `mode: single` with `targets`: the first target serves the request. */
export function singleStrategy(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      api.strategies.add('single', {
        execute(ctx, target, run, path) {
          const first = target.targets?.[0];
          if (first === undefined) throw new GatewayError('invalid_request', 'strategy single needs at least one target.', { param: 'targets' });
          return run(ctx, first, childPath(path, 0));
        },
      });
    },
  };
}

export default singleStrategy;
