import { childPath, discardResponse, GatewayError, type GatewayPlugin, type GatewayResponse, type Target } from '../../../sdk/index.js';

export const PLUGIN_NAME = 'strategy-fallback';

/** Whether a target's answer should make fallback move on. With no codes given, any non-2xx does. */
export function shouldFallBack(status: number, codes: readonly number[] | undefined): boolean {
  if (codes !== undefined) return codes.includes(status);
  return status < 200 || status >= 300;
}

function codesOf(value: unknown): number[] | undefined {
  return Array.isArray(value) ? (value as number[]) : undefined;
}

/**
 * `mode: fallback`: targets in order. A target that throws (network, timeout,
 * breaker open) or answers a status in its own `on_status_codes`, else the
 * strategy's, else any non-2xx, hands over to the next. When every target
 * fails, the last target's answer (or error) goes back as it came.
 */
export function fallbackStrategy(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    apply(api) {
      api.strategies.add('fallback', {
        async execute(ctx, target, run, path) {
          const targets: Target[] = target.targets ?? [];
          if (targets.length === 0) throw new GatewayError('invalid_request', 'fallback needs at least one target.', { param: 'targets' });
          const strategyCodes = codesOf(target.strategy?.on_status_codes);
          for (let i = 0; i < targets.length; i++) {
            const child = targets[i]!;
            const last = i === targets.length - 1;
            let response: GatewayResponse;
            try {
              response = await run(ctx, child, childPath(path, i));
            } catch (err) {
              if (last || ctx.signal.aborted) throw err;
              continue;
            }
            if (last || !shouldFallBack(response.status, codesOf(child.on_status_codes) ?? strategyCodes)) return response;
            discardResponse(response);
          }
          throw new Error('unreachable: the last target always returns or throws');
        },
      });
    },
  };
}

export default fallbackStrategy;
