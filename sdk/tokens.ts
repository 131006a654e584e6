import { serviceToken, type GatewayError, type RequestContext, type Target } from '../core/index.js';
import type { LimitPolicy, LimitPolicySet } from './limits.js';
import type { PricingTable } from './pricing/table.js';
import type { PromptLookup, PromptSelector, TemplateCheck } from './prompts.js';

/*
 * Services bundled plugins offer one another, each under a typed token.
 * A plugin that offers one calls `api.provide(TOKEN, service)` in `apply`;
 * one that uses it calls `api.resolve(TOKEN)` (or `tryResolve`, when the
 * other plugin is optional) from `onReady` on. Plugins never import each
 * other's files: this file is the whole contract between them.
 */

/**
 * A source of provider slugs beyond the server config's (the control plane
 * offers one, scoped to the caller's workspace). Asked by the provider
 * registry for slugs and virtual keys it does not know.
 */
export interface ProviderSource {
  /** The provider and credentials behind `ref` (a slug without `@`, or a virtual key) for this request; undefined when unknown. `target` is the request's target naming it. */
  find(ctx: RequestContext, ref: string, target: Target): Promise<Target | undefined>;
}
export const PROVIDER_SOURCE = serviceToken<ProviderSource>('gateway.provider-source');

/** A source of saved configs beyond the server config's (the control plane offers one). */
export interface ConfigSource {
  /** The saved config `id` as a target tree, for this request's caller; undefined when unknown. */
  find(ctx: RequestContext, id: string): Promise<Target | undefined>;
}
export const CONFIG_SOURCE = serviceToken<ConfigSource>('gateway.config-source');

/** One failure of a config against the schema: the dotted path of the field and the rule it broke. */
export interface ConfigIssue {
  /** e.g. `targets[1].cb_config.cooldown_interval`; empty for the config object itself. */
  path: string;
  message: string;
}

/** The config plugin's parser: the schema built from every declared target field. */
export interface ConfigParser {
  /**
   * Validates a config (JSON already decoded) and turns it into the target tree
   * the pipeline runs (inheritance resolved).
   * @throws GatewayError `invalid_request` (param `x-gateway-config`) naming the first issues.
   */
  parse(input: unknown): Target;
  /** The issues of a config, without throwing: empty when it is valid. */
  check(input: unknown): ConfigIssue[];
  /** The 400 for these issues, as `parse` throws it (`Invalid config: path: rule; …`). */
  error(issues: readonly ConfigIssue[]): GatewayError;
}
export const CONFIG_PARSER = serviceToken<ConfigParser>('gateway.config-parser');

/** The target a request's own headers select (`x-gateway-provider` and its companions). */
export interface HeaderTargets {
  /** The target the headers select, or undefined when they name no provider. Throws a 400 for a bad header. */
  fromHeaders(ctx: RequestContext): Target | undefined;
}
export const HEADER_TARGETS = serviceToken<HeaderTargets>('gateway.header-targets');

/** The price list used for request costs (the `pricing` plugin); see `pricingOf`. */
export const PRICING = serviceToken<PricingTable>('gateway.pricing');

/** Why a log entry was lost. */
export type LogDropReason = 'queue_full' | 'write_failed' | 'shutdown';

/** The state of the log store's write queue. */
export interface LogQueueStats {
  /** Entries held now (waiting and being written). */
  depth: number;
  /** Bytes held now (estimate). */
  bytes: number;
  maxEntries: number;
  maxBytes: number;
  /** Entries accepted since start. */
  accepted: number;
  /** Entries written since start. */
  written: number;
  /** Entries lost since start, by reason. */
  dropped: Record<LogDropReason, number>;
  /** Batches written, and write attempts that failed. */
  batches: number;
  writeErrors: number;
}

/** What the log store offers other plugins (the metrics read its queue). */
export interface LogStoreStatus {
  stats(): LogQueueStats;
  /** Writes everything queued now. */
  flush(): Promise<void>;
}
export const LOG_STORE = serviceToken<LogStoreStatus>('gateway.logs.store');

/**
 * Where the `limits` plugin finds the stored rate-limit and usage-limit
 * policies of a request (the control plane offers one: the active policies of
 * the request's workspace, through its TTL cache).
 */
export interface LimitPolicySource {
  /**
   * The active policies that may apply to this request. The same object is
   * handed out while it is cached (the enforcer compiles each set once), and
   * the answer is synchronous when cached, so a request with no policy pays
   * next to nothing.
   */
  policies(ctx: RequestContext): LimitPolicySet | Promise<LimitPolicySet>;
}
export const LIMIT_POLICY_SOURCE = serviceToken<LimitPolicySource>('gateway.limits.policy-source');

/** One group's consumption of a policy in its current window or period. */
export interface LimitGroupUsage {
  /** The group_by values of the bucket (`{}` for a policy without group_by). */
  group: Record<string, string>;
  /** Settled consumption: requests, tokens, or USD for a cost budget. */
  used: number;
  /** Held by requests in flight (reserved before the call, not settled yet). */
  reserved: number;
}

/** The current counters of a policy, for the admin API (offered by the `limits` plugin). */
export interface LimitCounters {
  /** Every group with a counter in the policy's current window (rate limits) or period (budgets), most used first. */
  usage(policy: LimitPolicy): Promise<{ start: number; end: number | null; groups: LimitGroupUsage[] }>;
}

export const LIMIT_COUNTERS = serviceToken<LimitCounters>('gateway.limits.counters');

/**
 * How the gateway authenticates to an upstream MCP server or agent, with its
 * secrets opened (sealed at rest: sdk/admin/upstream-auth.ts). Never log it.
 * `oauth`: each user authorizes the gateway (an OAuth 2.1 client) for their
 * own account; the client is the one configured, else registered dynamically.
 */
export type UpstreamAuth =
  | { type: 'none' }
  | { type: 'header'; name: string; value: string }
  | { type: 'oauth'; clientId: string | null; clientSecret: string | null; scopes: readonly string[] | null };

/** Hook lists as a config holds them (any of the four). */
export interface GuardrailLists {
  before_request_hooks?: readonly unknown[];
  input_guardrails?: readonly unknown[];
  after_request_hooks?: readonly unknown[];
  output_guardrails?: readonly unknown[];
}

/** The outcome of one phase of hooks run outside a provider call. */
export interface GuardrailVerdict {
  /** A hook with deny failed: refuse. */
  denied: boolean;
  /** A hook without deny failed: go on, and say so. */
  failed: boolean;
  /** The denial, as the guardrails plugin words it (`guardrail_denied` or the check's own code). */
  error: { code: string; message: string } | null;
  /** Each hook's result, in the `hook_results` shape. */
  results: unknown[];
}

/** What a check sees of a call that is not a chat request (an MCP tool call). */
export interface GuardrailSubject {
  text: string;
  request: Record<string, unknown>;
  response: Record<string, unknown> | null;
  /** A name for the call, in the checks' `route` (e.g. `mcp.tools.call`). */
  route: string;
}

/**
 * Runs hooks and guardrails on something other than a provider call (offered
 * by the `guardrails` plugin): the MCP gateway checks tool calls with it.
 */
export interface GuardrailRunner {
  /** Throws the 400 a config with these lists would get (`Invalid config: input_guardrails[0]…`). */
  check(lists: GuardrailLists): void;
  /** Runs one phase's hooks in order (output hooks all before the answer: `async` does not apply). */
  run(ctx: RequestContext, lists: GuardrailLists, phase: 'input' | 'output', subject: GuardrailSubject): Promise<GuardrailVerdict>;
}
export const GUARDRAIL_RUNNER = serviceToken<GuardrailRunner>('gateway.guardrails.runner');

/** A guardrail stored in the control plane, as the `guardrails` plugin runs it. */
export interface StoredGuardrail {
  /** The stored id (`pg-…`); a config may name it by id or by slug. */
  id: string;
  /** The current version: the guardrails plugin compiles each (id, version) once. */
  version: number;
  status: 'active' | 'archived';
  /** The guardrail entry: `deny`, `async`, `on_fail`, `on_success` and one property per check id (frozen). */
  entry: Readonly<Record<string, unknown>>;
}

/**
 * Where the `guardrails` plugin finds a guardrail a config names by id when
 * the server config does not define it (the control plane offers one: the
 * stored guardrails of the request's workspace, through its TTL cache).
 */
export interface GuardrailSource {
  /** The guardrail `ref` (id or slug) names for this request; undefined when there is none. Synchronous when cached. */
  find(ctx: RequestContext, ref: string): StoredGuardrail | undefined | Promise<StoredGuardrail | undefined>;
}
export const GUARDRAIL_SOURCE = serviceToken<GuardrailSource>('gateway.guardrails.source');

/** Checks a guardrail entry before it is stored (offered by the `guardrails` plugin, which knows the checks). */
export interface GuardrailValidator {
  /** The entry's issues (path inside the entry, rule broken); empty when it is a valid guardrail entry. */
  check(entry: unknown): ConfigIssue[];
  /** Every loaded check's credential parameter names (`GuardrailCheck.credentials`), known once the gateway is ready. */
  credentialKeys(): ReadonlySet<string>;
}
export const GUARDRAIL_VALIDATOR = serviceToken<GuardrailValidator>('gateway.guardrails.validator');

/**
 * Where the `prompts` plugin finds stored prompts (the control plane offers
 * one: the prompts of the request's workspace, through its TTL cache).
 */
export interface PromptSource {
  /**
   * The version `selector` names of the prompt `ref` (id or slug) in the workspace the request acts
   * in, with the partials it includes. `{ missing: 'prompt' }` for no such active prompt (another
   * workspace's included), `{ missing: 'version' }` for a version it does not have.
   */
  find(ctx: RequestContext, ref: string, selector: PromptSelector): Promise<PromptLookup>;
}
export const PROMPT_SOURCE = serviceToken<PromptSource>('gateway.prompts.source');

/**
 * The template language of stored prompts (the `prompts` plugin offers it), for
 * the control plane to check templates and partials when they are saved.
 */
export interface PromptTemplates {
  /** Parses one text (a message text or a partial's content): its syntax error, and the partials it includes. */
  check(text: string): TemplateCheck;
}
export const PROMPT_TEMPLATES = serviceToken<PromptTemplates>('gateway.prompts.templates');
