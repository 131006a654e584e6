import * as v from 'valibot';
import { fieldSchema as f, type Target, type TargetFields } from '../../sdk/index.js';
import { renameAliases } from './aliases.js';
import { SPEC_FIELD_ORDER } from './fields.js';

/**
 * A parsed gateway config (`x-gateway-config` header or a saved config), with
 * stand-in field names already renamed to the real ones. Its fields are the
 * ones the core and the loaded plugins declare; every item of `targets` is a
 * config too.
 */
export type GatewayConfig = Target;

const at = (input: Record<string, unknown>, key: string): v.ObjectPathItem => ({ type: 'object', origin: 'value', input, key, value: input[key] });
const atIndex = (input: readonly unknown[], key: number): v.ArrayPathItem => ({ type: 'array', origin: 'value', input, key, value: input[key] });

/** With passthrough the request itself picks the provider, so routing and guardrail settings would be silently ignored. */
const PASSTHROUGH_EXCLUSIVE = ['targets', 'strategy', 'override_params', 'before_request_hooks', 'after_request_hooks', 'input_guardrails', 'output_guardrails'] as const;

interface Strategy {
  mode?: string;
  conditions?: { then: string }[];
  default?: string;
}

/**
 * The spec's config object, strict at every level, built once from the
 * declared target fields: each field's own schema, the aliases renamed, and
 * the rules that span fields (the combinations, `strategy` with `targets`,
 * conditional target names, passthrough exclusivity). Field order decides the
 * order issues are reported in: the spec's order, then other fields in
 * declaration order.
 */
export function createConfigSchema(fields: TargetFields): v.GenericSchema<Record<string, unknown>, GatewayConfig> {
  const aliases = fields.aliases();
  const combinations = fields.all().flatMap((field) => (field.combination === undefined ? [] : [field.combination]));
  const list = combinations.map((keys) => keys.join(' + ')).join(', ');
  /**
   * How the combination rule applies per level. At the top level a provider
   * slug (`@…`) stands for a stored provider with its credentials, so it is
   * complete alone. A target may inherit credentials (and everything else) from
   * its parent config, so for a target any `provider` is enough; a target with
   * none of the combinations and no provider (e.g. only `name`) still routes
   * nowhere and is refused. The spec's other sentence, "without strategy.mode,
   * single-provider mode needs provider + api_key or virtual_key", describes
   * routing, not validation, and is not enforced here.
   */
  const levels = {
    root: {
      complete: (c: GatewayConfig) => typeof c.provider === 'string' && c.provider.startsWith('@'),
      message: `must set at least one of: ${list}; or a provider slug (provider starting with @)`,
    },
    target: {
      complete: (c: GatewayConfig) => c.provider !== undefined,
      message: `must set provider (credentials may come from the parent config) or at least one of: ${list}`,
    },
  } as const;

  const normaliseAliases = v.rawTransform<Record<string, unknown>, Record<string, unknown>>(({ dataset, addIssue, NEVER }) => {
    const { value, conflicts } = renameAliases(dataset.value, aliases);
    for (const { alias, real } of conflicts) {
      addIssue({ message: `is an alias of ${real}, which is also set; send only one of them`, path: [at(dataset.value, alias)] });
    }
    return conflicts.length === 0 ? value : NEVER;
  });

  const crossFieldRules = (level: keyof typeof levels) =>
    v.rawCheck<GatewayConfig>(({ dataset, addIssue }) => {
      // A structurally broken level has already been reported; its values are not safe to read.
      if (!dataset.typed) return;
      const config = dataset.value;
      const fail = (message: string, path: [v.IssuePathItem, ...v.IssuePathItem[]]) => addIssue({ message, path });

      if (config.passthrough === true) {
        for (const key of PASSTHROUGH_EXCLUSIVE) {
          if (config[key] !== undefined) fail('cannot be used with passthrough: true', [at(config, key)]);
        }
      }
      const strategy = config.strategy as Strategy | undefined;
      const targets = config.targets as GatewayConfig[] | undefined;
      if (targets !== undefined && strategy === undefined) fail('is required when targets is given', [at(config, 'strategy')]);
      if (strategy !== undefined && targets === undefined) fail('is required (a non-empty array) when strategy.mode is given', [at(config, 'targets')]);

      // Conditional routing picks a direct child by name; a typo would only surface per request, so it is caught here.
      if (strategy?.mode === 'conditional' && targets !== undefined) {
        const names = new Set(targets.flatMap((t) => (typeof t.name === 'string' ? [t.name] : [])));
        const known = names.size === 0 ? 'no item of targets has a name' : `names in targets: ${[...names].join(', ')}`;
        const strategyPath = at(config, 'strategy');
        const conditions = strategy.conditions ?? [];
        conditions.forEach((condition, i) => {
          if (!names.has(condition.then)) {
            fail(`must name a target in targets (got "${condition.then}"; ${known})`, [
              strategyPath,
              at(strategy as Record<string, unknown>, 'conditions'),
              atIndex(conditions, i),
              at(condition, 'then'),
            ]);
          }
        });
        if (strategy.default !== undefined && !names.has(strategy.default)) {
          fail(`must name a target in targets (got "${strategy.default}"; ${known})`, [strategyPath, at(strategy as Record<string, unknown>, 'default')]);
        }
      }

      // Only when nothing more specific was said: a config with any other issue is not "empty", it is wrong.
      if (dataset.issues !== undefined) return;
      const rule = levels[level];
      if (!rule.complete(config) && !combinations.some((keys) => keys.every((key) => config[key] !== undefined))) {
        addIssue({ message: rule.message });
      }
    });

  const entries: Record<string, v.GenericSchema> = {};
  const rank = (name: string) => {
    const i = SPEC_FIELD_ORDER.indexOf(name);
    return i === -1 ? SPEC_FIELD_ORDER.length : i;
  };
  // Array.prototype.sort is stable: fields the spec does not list keep their declaration order.
  for (const field of fields.all().sort((a, b) => rank(a.name) - rank(b.name))) entries[field.name] = v.optional(field.schema);

  const level = (name: keyof typeof levels): v.GenericSchema<Record<string, unknown>, GatewayConfig> => {
    const own = { ...entries };
    // Items of `targets` are configs themselves.
    if ('targets' in own) own.targets = v.optional(f.list(v.lazy(() => targetSchema), 'config objects', 1));
    return v.pipe(f.object(), normaliseAliases, v.strictObject(own, f.objectMessage), crossFieldRules(name)) as unknown as v.GenericSchema<Record<string, unknown>, GatewayConfig>;
  };
  const targetSchema = level('target');
  return level('root');
}
