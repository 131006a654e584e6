import * as v from 'valibot';
import { fieldSchema as f, isForwardable, MAX_CONTINUATIONS, type TargetField } from '../../sdk/index.js';

/** Routing modes a config may name; each needs its strategy plugin loaded. */
export const MODES = ['single', 'loadbalance', 'fallback', 'conditional'] as const;

const StrategySchema = v.pipe(
  f.strictObject({
    mode: f.oneOf(MODES),
    conditions: v.optional(f.list(f.strictObject({ query: f.object(), then: f.string() }), 'condition objects', 1)),
    default: v.optional(f.string()),
    on_status_codes: v.optional(f.statusCodes()),
    // Stream recovery (docs/formats.md, "Streams that survive a provider failure"): fallback only.
    on_stream_failure: v.optional(f.oneOf(['end', 'continue'] as const)),
    max_continuations: v.optional(f.integer(1, MAX_CONTINUATIONS)),
  }),
  v.forward(v.check((s) => s.on_stream_failure === undefined || s.mode === 'fallback', 'is only read by mode fallback (a retry has its own)'), ['on_stream_failure']),
  v.forward(v.check((s) => s.max_continuations === undefined || s.on_stream_failure === 'continue', 'needs on_stream_failure: "continue"'), ['max_continuations']),
  v.forward(v.check((s) => s.mode !== 'conditional' || s.conditions !== undefined, 'is required when mode is conditional'), ['conditions']),
  v.forward(v.check((s) => s.mode !== 'conditional' || s.default !== undefined, 'is required when mode is conditional'), ['default']),
);

/** A header a target forwards: never one that frames or addresses the request the gateway sends (`content-length`, `host`, hop-by-hop headers). */
const ForwardedHeader = v.pipe(
  f.string(),
  v.check(isForwardable, (issue) => `"${String(issue.input).slice(0, 64)}" is a connection or framing header, which the gateway sets itself and never forwards`),
);

/**
 * The order the spec lists the config object's fields in, which is the order
 * a client reads our issues in (at most three are reported). Fields it does
 * not list (a third-party plugin's) come after, in declaration order. Only an
 * order: which fields exist is up to the declarations.
 */
export const SPEC_FIELD_ORDER: readonly string[] = Object.freeze([
  'strategy',
  'targets',
  'name',
  'strict_reference_compliance',
  'provider',
  'api_key',
  'virtual_key',
  'prompt_id',
  'request_timeout',
  'custom_host',
  'passthrough',
  'forward_headers',
  'override_params',
  'weight',
  'on_status_codes',
  'cache',
  'retry',
  'cb_config',
  'resource_name',
  'deployment_id',
  'api_version',
  'deployments',
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_region',
  'aws_session_token',
  'vertex_project_id',
  'vertex_region',
  'vertex_service_account_json',
  'azure_region',
  'azure_deployment_name',
  'azure_endpoint_name',
  'azure_api_version',
  'azure_deployment_type',
  'azure_entra_scope',
  'openai_organization',
  'openai_project',
  'before_request_hooks',
  'after_request_hooks',
  'input_guardrails',
  'output_guardrails',
]);

/**
 * The target fields the config plugin owns: the routing tree and the spec's
 * settings that no other plugin reads. (`provider`, `api_key` and
 * `custom_host` are the core's; retry, cache, hooks, `prompt_id` and provider
 * fields belong to their plugins.) `targets` is declared for its name only: its
 * schema is the config schema itself, built when every field is known.
 */
export const CONFIG_FIELDS: Readonly<Record<string, TargetField>> = Object.freeze({
  strategy: { schema: StrategySchema, combination: ['strategy', 'targets'] },
  targets: { schema: f.list(f.object(), 'config objects', 1) },
  name: { schema: f.string() },
  strict_reference_compliance: { schema: f.boolean(), inherit: 'always' },
  passthrough: { schema: f.boolean(), combination: ['passthrough'] },
  forward_headers: { schema: f.list(ForwardedHeader, 'header names'), inherit: 'always', combination: ['forward_headers'] },
  override_params: { schema: f.object() },
  weight: { schema: f.number(0) },
  on_status_codes: { schema: f.statusCodes() },
});
