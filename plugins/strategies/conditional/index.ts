import { childPath, GatewayError, type GatewayPlugin, type Target } from '../../../sdk/index.js';
import { compileQuery, type Predicate } from './query.js';

export const PLUGIN_NAME = 'strategy-conditional';

interface Compiled {
  rules: Array<{ when: Predicate; index: number }>;
  fallback: number;
}

/**
 * `mode: conditional`: the first condition whose `query` matches
 * `metadata.*` and `params.*` names the target (`then`), else `default`.
 * Queries are compiled once per config target and kept with it.
 */
export function conditionalStrategy(): GatewayPlugin {
  const compiled = new WeakMap<Target, Compiled>();
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      api.strategies.add('conditional', {
        execute(ctx, target, run, path) {
          let c = compiled.get(target);
          if (c === undefined) {
            c = compile(target);
            compiled.set(target, c);
          }
          const data = { metadata: ctx.metadata ?? {}, params: ctx.body ?? {} };
          let index = c.fallback;
          for (const rule of c.rules) {
            if (rule.when(data)) {
              index = rule.index;
              break;
            }
          }
          return run(ctx, target.targets![index]!, childPath(path, index));
        },
      });
    },
  };
}

/** Compiles the conditions of a target, validating `then` and `default` names against its children. */
export function compile(target: Target): Compiled {
  const targets = target.targets ?? [];
  const strategy = target.strategy as { conditions?: Array<{ query: unknown; then: string }>; default?: string };
  const indexOf = (name: unknown, where: string) => {
    const i = targets.findIndex((t) => t.name === name);
    if (i === -1) throw new GatewayError('invalid_request', `Invalid config: ${where}: no target is named "${String(name)}".`, { param: 'x-gateway-config' });
    return i;
  };
  const rules = (strategy.conditions ?? []).map((cond, i) => ({
    when: compileQuery(cond.query, `strategy.conditions[${i}].query`),
    index: indexOf(cond.then, `strategy.conditions[${i}].then`),
  }));
  return { rules, fallback: indexOf(strategy.default, 'strategy.default') };
}

export default conditionalStrategy;
