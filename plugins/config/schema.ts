import * as v from 'valibot';
import { plainObject } from '../../core/index.js';
import { renameAliases } from './aliases.js';
import { configError } from './errors.js';
import { MAX_RETRY_ATTEMPTS } from './limits.js';

export { CONFIG_ALIASES } from './aliases.js';
export { MAX_RETRY_ATTEMPTS };

// Every rule carries its own message: valibot's defaults ("Invalid type:
// Expected …") read badly in an HTTP 400, and the value sent helps the client.
type Message = (issue: v.BaseIssue<unknown>) => string;
const got = (rule: string): Message => (issue) => `${rule} (got ${issue.received})`;
// A wrongly typed value may be a credential sent in the wrong field, and error
// messages end up in logs, so type errors name the JSON type, never the value.
const jsonType = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
const gotType = (rule: string): Message => (issue) => `${rule} (got ${jsonType(issue.input)})`;

const str = () => v.string(gotType('must be a string'));
const bool = () => v.boolean(gotType('must be true or false'));
const num = () => v.number(gotType('must be a number'));
const int = () => v.pipe(num(), v.integer(got('must be an integer')));
const atLeast = (min: number) => v.minValue<number, number, Message>(min, got(`must be at least ${min}`));
const atMost = (max: number) => v.maxValue<number, number, Message>(max, got(`must be at most ${max}`));
const intAtLeast = (min: number) => v.pipe(int(), atLeast(min));
const intBetween = (min: number, max: number) => v.pipe(int(), atLeast(min), atMost(max));
const numAtLeast = (min: number) => v.pipe(num(), atLeast(min));
const list = <const T extends v.GenericSchema>(item: T, what: string) => v.array(item, gotType(`must be an array of ${what}`));
const nonEmptyList = <const T extends v.GenericSchema>(item: T, what: string) =>
  v.pipe(list(item, what), v.minLength(1, 'must have at least 1 item'));
const json = () => plainObject('must be a JSON object');
const statusCodes = () => list(int(), 'integers');

// strictObject reports both a missing required key and an unknown key with the
// object's own message; `expected: 'never'` is how valibot marks the unknown one.
const objectMessage: Message = (issue) => (issue.expected === 'never' ? 'is not an allowed property' : 'is required');

/** A strict JSON object. valibot's object schemas accept arrays, so the plain-object check goes first. */
const strict = <const E extends v.ObjectEntries>(entries: E) => v.pipe(json(), v.strictObject(entries, objectMessage));

const at = (input: Record<string, unknown>, key: string): v.ObjectPathItem => ({ type: 'object', origin: 'value', input, key, value: input[key] });
const atIndex = (input: readonly unknown[], key: number): v.ArrayPathItem => ({ type: 'array', origin: 'value', input, key, value: input[key] });

const MODES = ['single', 'loadbalance', 'fallback', 'conditional'] as const;

const StrategySchema = v.pipe(
  strict({
    mode: v.picklist(MODES, got(`must be one of ${MODES.join(', ')}`)),
    conditions: v.optional(nonEmptyList(strict({ query: json(), then: str() }), 'condition objects')),
    default: v.optional(str()),
    on_status_codes: v.optional(statusCodes()),
  }),
  v.forward(v.check((s) => s.mode !== 'conditional' || s.conditions !== undefined, 'is required when mode is conditional'), ['conditions']),
  v.forward(v.check((s) => s.mode !== 'conditional' || s.default !== undefined, 'is required when mode is conditional'), ['default']),
);

const CacheSchema = strict({
  mode: v.picklist(['simple', 'semantic'], got('must be simple or semantic')),
  max_age: v.optional(intAtLeast(0)),
});

const RetrySchema = strict({
  attempts: intBetween(0, MAX_RETRY_ATTEMPTS),
  on_status_codes: v.optional(statusCodes()),
  // Absent means false (spec default). No default is injected so the output stays what the client sent.
  use_retry_after_headers: v.optional(bool()),
});

const CircuitBreakerSchema = strict({
  failure_threshold: intAtLeast(1),
  cooldown_interval: numAtLeast(30_000),
  // Absent means "status codes above 500" (spec default); applied by the breaker, not here.
  failure_status_codes: v.optional(list(intBetween(100, 599), 'HTTP status codes')),
});

const DeploymentSchema = strict({
  deployment_id: str(),
  alias: str(),
  api_version: str(),
  is_default: v.optional(bool()),
});

const FeedbackSchema = strict({ value: v.optional(num()), weight: v.optional(num()), metadata: v.optional(json()) });
/** `on_fail` / `on_success` of before-request hooks and output guardrails, the two places the spec gives `deny`. */
const OutcomeWithDeny = strict({ feedback: v.optional(FeedbackSchema), deny: v.optional(bool()) });
/** `on_fail` / `on_success` where the spec lists feedback only (after-request hooks, input guardrails); strict, so `deny` there is refused rather than silently ignored. */
const Outcome = strict({ feedback: v.optional(FeedbackSchema) });
const CheckSchema = strict({ id: str(), parameters: json() });

const BeforeHookSchema = strict({
  id: str(),
  type: v.optional(str()),
  checks: v.optional(list(CheckSchema, 'check objects')),
  on_fail: v.optional(OutcomeWithDeny),
  on_success: v.optional(OutcomeWithDeny),
});

const AfterHookSchema = strict({
  id: str(),
  type: v.optional(str()),
  async: v.optional(bool()),
  checks: v.optional(list(CheckSchema, 'check objects')),
  on_fail: v.optional(Outcome),
  on_success: v.optional(Outcome),
});

/**
 * A guardrail entry is a guardrail id, or an inline guardrail whose extra
 * properties map a check id to that check's parameters. A union would hide the
 * inner path behind "matches no option", so the branch is picked by the input
 * type instead; both branches are built once here.
 */
function guardrailEntry(outcome: typeof Outcome | typeof OutcomeWithDeny) {
  const inline = v.pipe(
    plainObject('must be a guardrail id (string) or a guardrail object'),
    v.objectWithRest(
      { id: v.optional(str()), deny: v.optional(bool()), async: v.optional(bool()), on_fail: v.optional(outcome), on_success: v.optional(outcome) },
      plainObject('must be an object of check parameters (check id → parameters)'),
    ),
  );
  const id = str();
  return v.lazy((input) => (typeof input === 'string' ? id : inline));
}

/** Every config property except `targets`, which needs the recursive type below. Key order is the order issues are reported in. */
const BASE_ENTRIES = {
  strategy: v.optional(StrategySchema),
  name: v.optional(str()),
  strict_reference_compliance: v.optional(bool()),
  provider: v.optional(str()),
  api_key: v.optional(str()),
  virtual_key: v.optional(str()),
  prompt_id: v.optional(str()),
  request_timeout: v.optional(intAtLeast(1)),
  custom_host: v.optional(str()),
  passthrough: v.optional(bool()),
  forward_headers: v.optional(list(str(), 'header names')),
  override_params: v.optional(json()),
  weight: v.optional(numAtLeast(0)),
  on_status_codes: v.optional(statusCodes()),
  cache: v.optional(CacheSchema),
  retry: v.optional(RetrySchema),
  cb_config: v.optional(CircuitBreakerSchema),
  resource_name: v.optional(str()),
  deployment_id: v.optional(str()),
  api_version: v.optional(str()),
  deployments: v.optional(list(DeploymentSchema, 'deployment objects')),
  aws_access_key_id: v.optional(str()),
  aws_secret_access_key: v.optional(str()),
  aws_region: v.optional(str()),
  aws_session_token: v.optional(str()),
  vertex_project_id: v.optional(str()),
  vertex_region: v.optional(str()),
  vertex_service_account_json: v.optional(json()),
  azure_region: v.optional(str()),
  azure_deployment_name: v.optional(str()),
  azure_endpoint_name: v.optional(str()),
  azure_api_version: v.optional(str()),
  azure_deployment_type: v.optional(v.picklist(['serverless', 'managed'], got('must be serverless or managed'))),
  azure_entra_scope: v.optional(str()),
  openai_organization: v.optional(str()),
  openai_project: v.optional(str()),
  before_request_hooks: v.optional(list(BeforeHookSchema, 'hook objects')),
  after_request_hooks: v.optional(list(AfterHookSchema, 'hook objects')),
  input_guardrails: v.optional(list(guardrailEntry(Outcome), 'guardrail entries')),
  output_guardrails: v.optional(list(guardrailEntry(OutcomeWithDeny), 'guardrail entries')),
};

/**
 * A parsed gateway config (`x-gateway-config` header or a saved config), with
 * stand-in credential names already renamed to the real ones (see
 * {@link CONFIG_ALIASES}). Every item of `targets` is a config too.
 */
export type GatewayConfig = v.InferOutput<v.StrictObjectSchema<typeof BASE_ENTRIES, undefined>> & {
  targets?: GatewayConfig[];
};

type ConfigKey = keyof GatewayConfig;

/**
 * The spec's "at least one of these property combinations". Presence is what
 * counts (as in a JSON-schema `anyOf` of `required` lists): `passthrough:
 * false` or an empty hook list satisfies its entry, matching the spec's wording.
 * The spec's "three cloud-A credential fields" lists two; the two are required,
 * region and session token stay optional. The spec's other sentence, "without
 * strategy.mode, single-provider mode needs provider + api_key or
 * virtual_key", describes routing, not validation: it would contradict this
 * list (a config with only `cache` is valid here, its provider then comes from
 * the request headers), so it is not enforced by the schema.
 */
const COMBINATIONS: readonly (readonly ConfigKey[])[] = [
  ['provider', 'api_key'],
  ['provider', 'custom_host'],
  ['virtual_key'],
  ['strategy', 'targets'],
  ['cache'],
  ['retry'],
  ['prompt_id'],
  ['forward_headers'],
  ['request_timeout'],
  ['provider', 'aws_access_key_id', 'aws_secret_access_key'],
  ['provider', 'vertex_region', 'vertex_service_account_json'],
  ['provider', 'vertex_region', 'vertex_project_id'],
  ['provider', 'azure_deployment_name', 'azure_deployment_type', 'azure_region', 'azure_api_version'],
  ['provider', 'azure_endpoint_name', 'azure_deployment_type'],
  ['after_request_hooks'],
  ['before_request_hooks'],
  ['input_guardrails'],
  ['output_guardrails'],
  ['passthrough'],
];

const COMBINATION_LIST = COMBINATIONS.map((keys) => keys.join(' + ')).join(', ');

/**
 * How the combination rule applies per level. At the top level a provider slug
 * (`@…`) stands for a stored provider with its credentials, so it is complete
 * alone. A target may inherit credentials (and everything else) from its parent
 * config, so for a target any `provider` is enough; a target with none of the
 * combinations and no provider (e.g. only `name`) still routes nowhere and is
 * refused.
 */
const LEVELS = {
  root: {
    complete: (c: GatewayConfig) => c.provider?.startsWith('@') === true,
    message: `must set at least one of: ${COMBINATION_LIST}; or a provider slug (provider starting with @)`,
  },
  target: {
    complete: (c: GatewayConfig) => c.provider !== undefined,
    message: `must set provider (credentials may come from the parent config) or at least one of: ${COMBINATION_LIST}`,
  },
} as const;

/** With passthrough the request itself picks the provider, so routing and guardrail settings would be silently ignored. */
const PASSTHROUGH_EXCLUSIVE = [
  'targets',
  'strategy',
  'override_params',
  'before_request_hooks',
  'after_request_hooks',
  'input_guardrails',
  'output_guardrails',
] as const satisfies readonly ConfigKey[];

const normaliseAliases = v.rawTransform<Record<string, unknown>, Record<string, unknown>>(({ dataset, addIssue, NEVER }) => {
  const { value, conflicts } = renameAliases(dataset.value);
  for (const { alias, real } of conflicts) {
    addIssue({ message: `is an alias of ${real}, which is also set; send only one of them`, path: [at(dataset.value, alias)] });
  }
  return conflicts.length === 0 ? value : NEVER;
});

/** Rules that span several properties of one config level. */
function crossFieldRules(level: keyof typeof LEVELS) {
  return v.rawCheck<GatewayConfig>(({ dataset, addIssue }) => {
    // A structurally broken level has already been reported; its values are not safe to read.
    if (!dataset.typed) return;
    const config = dataset.value;
    const fail = (message: string, path: [v.IssuePathItem, ...v.IssuePathItem[]]) => addIssue({ message, path });

    if (config.passthrough === true) {
      for (const key of PASSTHROUGH_EXCLUSIVE) {
        if (config[key] !== undefined) fail('cannot be used with passthrough: true', [at(config, key)]);
      }
    }
    const { strategy, targets } = config;
    if (targets !== undefined && strategy === undefined) fail('is required when targets is given', [at(config, 'strategy')]);
    if (strategy !== undefined && targets === undefined) fail('is required (a non-empty array) when strategy.mode is given', [at(config, 'targets')]);

    // Conditional routing picks a direct child by name; a typo would only surface per request, so it is caught here.
    if (strategy?.mode === 'conditional' && targets !== undefined) {
      const names = new Set(targets.flatMap((t) => (t.name === undefined ? [] : [t.name])));
      const known = names.size === 0 ? 'no item of targets has a name' : `names in targets: ${[...names].join(', ')}`;
      const strategyPath = at(config, 'strategy');
      const conditions = strategy.conditions ?? [];
      conditions.forEach((condition, i) => {
        if (!names.has(condition.then)) {
          fail(`must name a target in targets (got "${condition.then}"; ${known})`, [
            strategyPath,
            at(strategy, 'conditions'),
            atIndex(conditions, i),
            at(condition, 'then'),
          ]);
        }
      });
      if (strategy.default !== undefined && !names.has(strategy.default)) {
        fail(`must name a target in targets (got "${strategy.default}"; ${known})`, [strategyPath, at(strategy, 'default')]);
      }
    }

    // Only when nothing more specific was said: a config with any other issue is not "empty", it is wrong.
    if (dataset.issues !== undefined) return;
    const rule = LEVELS[level];
    if (!rule.complete(config) && !COMBINATIONS.some((keys) => keys.every((key) => config[key] !== undefined))) {
      addIssue({ message: rule.message });
    }
  });
}

/** One config level: rename aliases, check the fields, then the cross-field rules. Items of `targets` recurse through `TargetSchema`. */
function configLevel(level: keyof typeof LEVELS): v.GenericSchema<Record<string, unknown>, GatewayConfig> {
  const targets = v.optional(nonEmptyList(v.lazy(() => TargetSchema), 'config objects'));
  const { strategy, ...rest } = BASE_ENTRIES;
  return v.pipe(
    json(),
    normaliseAliases,
    // `strategy` first, then `targets`, then the rest, so issues come in the spec's field order.
    v.strictObject({ strategy, targets, ...rest }, objectMessage),
    crossFieldRules(level),
  );
}

const TargetSchema = configLevel('target');

/**
 * The gateway config object (spec, "Config object"). Strict at every level the
 * spec lists fields for; accepts the spec's stand-in credential names and
 * outputs the real ones. Use {@link parseConfig} unless valibot issues are
 * wanted directly.
 */
export const ConfigSchema = configLevel('root');

/** Like {@link parseConfig}, without throwing: the valibot result with its issues. */
export const safeParseConfig = v.safeParser(ConfigSchema);

/**
 * Validates and normalises a config object (already JSON-decoded).
 *
 * @throws GatewayError `invalid_request` (400, `param: 'x-gateway-config'`)
 *   whose message names the path and rule of the first issues, e.g.
 *   `Invalid config: targets[1].cb_config.cooldown_interval: must be at least 30000 (got 1000)`.
 */
export function parseConfig(input: unknown): GatewayConfig {
  const result = safeParseConfig(input);
  if (result.success) return result.output;
  throw configError(result.issues);
}
