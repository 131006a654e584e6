import { serviceToken, type GatewayError, type RequestContext, type Target } from '../core/index.js';
import type { PricingTable } from './pricing/table.js';

/*
 * Services bundled plugins offer one another, each under a typed token.
 * A plugin that offers one calls `api.provide(TOKEN, service)` in `apply`;
 * one that uses it calls `api.resolve(TOKEN)` (or `tryResolve`, when the
 * other plugin is optional) from `onReady` on. Plugins never import each
 * other's files: this file is the whole contract between them.
 */

/** A source of saved configs beyond the server config's (the `config` plugin offers the workspaces' own when the control plane is loaded). */
export interface ConfigSource {
  /** The saved config `id` as a target tree, for this request's caller; undefined when unknown. */
  find(ctx: RequestContext, id: string): Promise<Target | undefined>;
  /** Whether a workspace has an active saved config of this id or slug (checked when a stored prompt naming one is saved). */
  exists?(workspaceId: string, ref: string): Promise<boolean>;
}
/** The {@link ConfigSource} service: saved configs beyond the server config's (offered by the `config` plugin's store, read by the `config` plugin). */
export const CONFIG_SOURCE = serviceToken<ConfigSource>('gateway.config-source');

/** One failure of a config against the schema: the dotted path of the field and the rule it broke. */
export interface ConfigIssue {
  /** e.g. `targets[1].cb_config.cooldown_interval`; empty for the config object itself. */
  path: string;
  /** The rule it broke, in words. */
  message: string;
}

/** The target a request's own headers select (`x-gateway-provider` and its companions). */
export interface HeaderTargets {
  /** The target the headers select, or undefined when they name no provider. Throws a 400 for a bad header. */
  fromHeaders(ctx: RequestContext): Target | undefined;
}
/** The {@link HeaderTargets} service (offered by the `provider-headers` plugin): the `config` plugin asks it for the target a request's headers select. */
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
  /** Most entries the queue holds; more are dropped (`queue_full`). */
  maxEntries: number;
  /** Most bytes the queue holds (estimate); more are dropped (`queue_full`). */
  maxBytes: number;
  /** Entries accepted since start. */
  accepted: number;
  /** Entries written since start. */
  written: number;
  /** Entries lost since start, by reason. */
  dropped: Record<LogDropReason, number>;
  /** Batches written, and write attempts that failed. */
  batches: number;
  /** Write attempts that failed since start. */
  writeErrors: number;
}

/** What the log store offers other plugins (the metrics read its queue). */
export interface LogStoreStatus {
  /** The write queue's state now. */
  stats(): LogQueueStats;
  /** Writes everything queued now. */
  flush(): Promise<void>;
}
/** The {@link LogStoreStatus} service (offered by the `logs` plugin): the metrics read its queue, `request-log` knows the entries are stored. */
export const LOG_STORE = serviceToken<LogStoreStatus>('gateway.logs.store', 'log-store');

/**
 * How the gateway authenticates to an upstream MCP server or agent, with its
 * secrets opened (sealed at rest: sdk/admin/upstream-auth.ts). Never log it.
 * `oauth`: each user authorizes the gateway (an OAuth 2.1 client) for their
 * own account; the client is the one configured, else registered dynamically.
 */
export type UpstreamAuth =
  | { type: 'none' }
  | { type: 'header'; name: string; value: string }
  | {
      type: 'oauth';
      clientId: string | null;
      clientSecret: string | null;
      scopes: readonly string[] | null;
      /** The client was registered by the gateway (dynamic registration), not configured. */
      registered?: boolean;
      /** Of a registered client: the authorization server it was registered at; null when unknown. */
      issuer?: string | null;
    };

/** Hook lists as a config holds them (any of the four). */
export interface GuardrailLists {
  /** Input hooks, in the hook form: run on the request before the provider call. */
  before_request_hooks?: readonly unknown[];
  /** Input guardrails, as guardrail entries or names: run on the request after `before_request_hooks`. */
  input_guardrails?: readonly unknown[];
  /** Output hooks, in the hook form: run on the answer after the provider call. */
  after_request_hooks?: readonly unknown[];
  /** Output guardrails, as guardrail entries or names: run on the answer after `after_request_hooks`. */
  output_guardrails?: readonly unknown[];
}

/** The outcome of one phase of hooks run outside a provider call. */
export interface GuardrailVerdict {
  /** A hook with deny failed: refuse. */
  denied: boolean;
  /** A hook without deny failed: go on, and say so. */
  failed: boolean;
  /** The denial, as the guardrails plugin words it (`guardrail_denied` or the check's own code, with the meaning its plugin declared). */
  error: GatewayError | null;
  /** Each hook's result, in the `hook_results` shape. */
  results: unknown[];
}

/** What a check sees of a call that is not a chat request (an MCP tool call). */
export interface GuardrailSubject {
  /** The text the checks read: their `CheckInput.text` (a tool call's arguments, its result). */
  text: string;
  /** The call's request as JSON: the checks' `CheckInput.request`. */
  request: Record<string, unknown>;
  /** The call's answer as JSON: the checks' `CheckInput.response`; null in the input phase. */
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
/** The {@link GuardrailRunner} service (offered by the `guardrails` plugin): the MCP gateway runs a workspace's hooks on tool calls with it. */
export const GUARDRAIL_RUNNER = serviceToken<GuardrailRunner>('gateway.guardrails.runner');

/**
 * Checks a guardrail entry (offered by the `guardrails` plugin, which knows the checks). The `config`
 * plugin reads its credential parameters: the credentials of a saved config's inline guardrails are sealed.
 */
export interface GuardrailValidator {
  /** The entry's issues (path inside the entry, rule broken); empty when it is a valid guardrail entry. */
  check(entry: unknown): ConfigIssue[];
  /** Every loaded check's credential parameter names (`GuardrailCheck.credentials`), known once the gateway is ready. */
  credentialKeys(): ReadonlySet<string>;
}
/** The {@link GuardrailValidator} service (offered by the `guardrails` plugin): the `config` plugin checks saved configs' guardrail entries with it. */
export const GUARDRAIL_VALIDATOR = serviceToken<GuardrailValidator>('gateway.guardrails.validator');
