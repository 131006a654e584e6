import {
  childPath,
  deadlineError,
  deadlineLeft,
  DEFAULT_MAX_CONTINUATIONS,
  discardResponse,
  GatewayError,
  recoverStream,
  routeApi,
  ROUTING,
  runContinuation,
  type Continued,
  type GatewayPlugin,
  type GatewayResponse,
  type RequestContext,
  type RoutingService,
  type Target,
} from '../../../sdk/index.js';

export const PLUGIN_NAME = 'strategy-fallback';

/** Whether a target's answer should make fallback move on. With no codes given, any non-2xx does. */
export function shouldFallBack(status: number, codes: readonly number[] | undefined): boolean {
  if (codes !== undefined) return codes.includes(status);
  return status < 200 || status >= 300;
}

function codesOf(value: unknown): number[] | undefined {
  return Array.isArray(value) ? (value as number[]) : undefined;
}

type Run = (ctx: RequestContext, target: Target, path: string) => Promise<GatewayResponse>;

/**
 * With `on_stream_failure: "continue"`: a stream that breaks after it started is continued by the targets
 * after the one that answered, in order, then by that one again (docs/formats.md, "Streams that survive a
 * provider failure").
 */
function continued(ctx: RequestContext, response: GatewayResponse, target: Target, targets: Target[], order: number[], k: number, run: Run, path: string): GatewayResponse {
  const strategy = target.strategy!;
  const max = typeof strategy.max_continuations === 'number' ? strategy.max_continuations : DEFAULT_MAX_CONTINUATIONS;
  const idle = ctx.resolvedTarget?.stream_idle_timeout;
  const route = routeApi(ctx.route!);
  let queue = [...order.slice(k + 1), order[k]!];
  let last = order[k]!;
  return recoverStream(ctx, response, {
    max,
    idleMs: typeof idle === 'number' ? idle : 0,
    async next(partial, signal): Promise<Continued | null> {
      if (queue.length === 0) queue = [last];
      while (queue.length > 0) {
        // The request's deadline bounds the continuations too.
        if (ctx.signal.aborted || signal.aborted || deadlineLeft(ctx) <= 0) return null;
        const i = queue.shift()!;
        try {
          const answer = await runContinuation(ctx, route, targets[i]!, partial, () => run(ctx, targets[i]!, childPath(path, i)), signal);
          if (answer.response.status >= 200 && answer.response.status < 300) {
            last = i;
            return answer;
          }
          discardResponse(answer.response);
        } catch {
          /* this target failed: the next one is asked */
        }
      }
      return null;
    },
  });
}

/**
 * `mode: fallback`: targets in order. A target that throws (network, timeout,
 * breaker open) or answers a status in its own `on_status_codes`, else the
 * strategy's, else any non-2xx, hands over to the next. When every target
 * fails, the last target's answer (or error) goes back as it came. With `on_stream_failure: "continue"`, a
 * stream that breaks once it started is continued by the next targets (see `continued`).
 */
export function fallbackStrategy(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    uses: [ROUTING],
    state: [],
    apply(api) {
      let routing: RoutingService | undefined;
      api.onReady(() => {
        routing = api.tryResolve(ROUTING);
      });
      api.strategies.add('fallback', {
        async execute(ctx, target, run, path) {
          const targets: Target[] = target.targets ?? [];
          if (targets.length === 0) throw new GatewayError('invalid_request', 'fallback needs at least one target.', { param: 'targets' });
          const strategyCodes = codesOf(target.strategy?.on_status_codes);
          // With the routing plugin: the targets that can take the request now, in order (rate-limit headroom).
          let order = targets.map((_, i) => i);
          if (routing !== undefined) {
            const plan = await routing.plan(ctx, target, targets, path, 'fallback', Math.random);
            if (plan.order.length === 0) throw plan.exhausted!;
            order = plan.order;
          }
          for (let k = 0; k < order.length; k++) {
            const i = order[k]!;
            const child = targets[i]!;
            const last = k === order.length - 1;
            // The request's deadline is spent: no further target is tried.
            if (k > 0 && deadlineLeft(ctx) <= 0) throw deadlineError(ctx);
            let response: GatewayResponse;
            try {
              response = await run(ctx, child, childPath(path, i));
            } catch (err) {
              if (last || ctx.signal.aborted) throw err;
              continue;
            }
            if (last || !shouldFallBack(response.status, codesOf(child.on_status_codes) ?? strategyCodes)) {
              return target.strategy?.on_stream_failure === 'continue' ? continued(ctx, response, target, targets, order, k, run, path) : response;
            }
            discardResponse(response);
          }
          throw new Error('unreachable: the last target always returns or throws');
        },
      });
    },
  };
}

export default fallbackStrategy;
