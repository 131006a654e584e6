import type { Logger } from 'pino';
import type { ErrorCodeSpec } from './errors.js';
import type { TargetField, TargetFields } from './fields.js';
import type { GatewayHooks } from './hooks.js';
import type { Registry } from './registry.js';
import type { RouteTable } from './router.js';
import type { ServiceToken } from './tokens.js';
import type { RequestContext } from './context.js';
import type { Interceptor, Provider, Strategy, GatewayOptions, Target } from './types.js';
import type { UpstreamClient } from './upstream/client.js';
import type { DetachedRequest, DetachedResponse, InternalRequest, InternalResponse } from './pipeline.js';

/**
 * A plugin: a name and an `apply` that registers taps, routes, providers,
 * strategies or services. `apply` runs once at boot and must be synchronous;
 * async set-up (connecting to a store, running migrations) goes in `api.onReady`.
 * What a plugin brings besides code (target fields, error codes) it declares
 * on the object, so the gateway knows it before any plugin is applied.
 */
export interface GatewayPlugin {
  /** Unique, stable name, used in logs and errors. */
  readonly name: string;
  /**
   * The range of the plugin API this plugin needs (semver, e.g. `^2.0.0`),
   * checked against {@link GATEWAY_API_VERSION} at boot: a mismatch stops the
   * start with both versions named.
   */
  readonly gatewayApi?: string;
  /**
   * The target (config) fields this plugin reads, by name: their schema, and
   * whether they are credentials or decide where a call goes. A config naming
   * a field no loaded plugin declares is refused.
   */
  readonly targetFields?: Readonly<Record<string, TargetField>>;
  /** Error codes this plugin raises, with their HTTP status and type. Building a GatewayError with an undeclared code throws. */
  readonly errorCodes?: Readonly<Record<string, ErrorCodeSpec>>;
  /**
   * Request headers this plugin reads that choose where a request goes (`x-gateway-provider`,
   * `x-gateway-custom-host`, `x-gateway-config`, … lower case; see `ROUTING_HEADERS`). A request
   * carrying a routing header that no loaded plugin declares is refused with a 400 naming it,
   * rather than sent somewhere its sender did not choose.
   */
  readonly headers?: readonly string[];
  /** Service tokens this plugin registers with `api.provide`; a declared one it does not provide stops the boot. */
  readonly provides?: readonly ServiceToken<unknown>[];
  /**
   * Service tokens this plugin cannot work without: when no loaded plugin provides one, the boot
   * stops with an error naming the token and the plugin that provides it, rather than the plugin
   * degrading silently. Resolve them with `api.resolve` from `onReady` on.
   */
  readonly requires?: readonly ServiceToken<unknown>[];
  /** Service tokens this plugin uses when present and works without (documented, never checked); see `api.provided`. */
  readonly uses?: readonly ServiceToken<unknown>[];
  /**
   * What this plugin keeps between requests (counters, caches, what it learnt of a target, stored
   * objects, sessions) and whose each piece is: an empty list when it keeps nothing. A workspace's
   * state is keyed by the workspace the request acts in (`tenantOf`) and by what it describes (a
   * target as resolved by `api.resolveLeaf`, never a slug's name), so that nothing one workspace
   * does changes what another sees. Every bundled plugin declares it, and the tenant-isolation
   * matrix runs traffic in two workspaces against each `workspace` entry (docs/security.md,
   * "Tenant isolation").
   */
  readonly state?: readonly KeptState[];
  /** Registers the plugin's taps, routes, providers, strategies and services; runs once at boot, synchronously. */
  apply(api: PluginAPI): void;
}

/** One piece of state a plugin keeps between requests (see {@link GatewayPlugin.state}). */
export interface KeptState {
  /** Its name, unique within the plugin (`headroom`, `entries`). */
  readonly name: string;
  /**
   * Whose it is:
   * - `workspace`: each workspace's own, keyed by the workspace a request acts in (and by what it
   *   describes); nothing of one workspace's is read or changed by another's requests;
   * - `credential`: keyed by a digest of a credential (a provider token, a signer, a session's
   *   secret): only who holds the credential reaches it, whatever workspace it acts in;
   * - `organisation`: one for the whole deployment on purpose (an organisation-wide limit, the
   *   metrics only organisation-level keys read, a cache keyed by content that holds no answer).
   */
  readonly scope: 'workspace' | 'credential' | 'organisation';
  /** What it holds and what it is keyed by, in a sentence (docs/security.md lists them). */
  readonly keyedBy: string;
}

/** The registries plugins fill at boot. */
export interface Registries {
  /** Provider adapters by name (`openai`, `anthropic`, …). */
  readonly providers: Registry<Provider>;
  /** Routing strategies by mode (`loadbalance`, `fallback`, `conditional`, …). */
  readonly strategies: Registry<Strategy>;
  /** Cache modes by name (`simple`, `semantic`); shape settled by the caching plugins. */
  readonly cacheModes: Registry<unknown>;
  /** Guardrail checks by id (`default.regexMatch`, …); shape settled by the guardrail plugins. */
  readonly checks: Registry<unknown>;
  /** Stores by name (`memory`, `sqlite`, `redis`, `postgres`); shape settled by the store plugins. */
  readonly stores: Registry<unknown>;
}

/** Everything a plugin may touch. Nothing here is valid to call after boot except `logger`, `upstream`, `resolve` and the read-only `routes.list()`. */
export interface PluginAPI extends Registries {
  /** The lifecycle hooks to tap (`api.hooks.beforeRequest.tap({ name, stage }, fn)`). */
  readonly hooks: GatewayHooks;
  /** The route table: `add` routes during `apply`; `list()` and `byName()` stay readable after boot. */
  readonly routes: RouteTable;
  /** Every target field declared by the core and the loaded plugins (complete and sealed before any `apply`). */
  readonly targetFields: TargetFields;
  /** The error codes of this gateway: the core's and the loaded plugins' declared ones, with their owner. */
  readonly errorCodes: ReadonlyMap<string, Readonly<ErrorCodeSpec & { owner: string }>>;
  /** Root logger; secrets are redacted at the core's paths and at every declared credential field (`target.<field>`, `config.<field>`). */
  readonly logger: Logger;
  /** Core options with defaults filled in. */
  readonly options: Readonly<Required<GatewayOptions>>;
  /** The pooled upstream HTTP client, for plugins that call out (webhooks, embeddings). */
  readonly upstream: UpstreamClient;
  /**
   * Wraps every leaf upstream call (retry, timeout, breaker). Lower `stage` is
   * outermost; pick one from `STAGES.interceptor` (default `DEFAULT`, inside the
   * resilience chain). The chain is composed once, when boot finishes.
   */
  addInterceptor(name: string, interceptor: Interceptor, stage?: number): void;
  /** Registers a shared service under a token (`serviceToken<T>(name)`, or one of the SDK's). During `apply` only. */
  provide<T>(token: ServiceToken<T>, value: T): void;
  /** Returns a service registered with `provide`. Throws when absent. Call from `onReady` on: a provider may be applied after you. */
  resolve<T>(token: ServiceToken<T>): T;
  /** Like `resolve`, but undefined when no plugin provides the service (an optional collaborator). */
  tryResolve<T>(token: ServiceToken<T>): T | undefined;
  /**
   * Whether a loaded plugin provides the service: one that declared it in `provides` (known before
   * any `apply`, so a plugin can decide what to register), or one that already provided it.
   */
  provided(token: ServiceToken<unknown>): boolean;
  /**
   * Makes a request through the gateway's own strategy, interceptors and
   * transport (logged, marked internal), e.g. an embedding for a cache.
   * Only valid once boot has finished.
   */
  internalRequest(request: InternalRequest): Promise<InternalResponse>;
  /**
   * The provider and credentials a leaf target stands for (a `@slug` or virtual key resolved to
   * its integration), as the `resolveTarget` taps make them, for a plugin that keys state by what
   * a target is before the strategy calls it (routing headroom, cache entries). Resolved once per
   * request and leaf object: the strategy's call of that leaf uses the same answer (and the same
   * refusal, for a slug that does not resolve). The taps may then run before `ctx.targetPath` and
   * `ctx.leafTarget` name this leaf. Only valid once boot has finished.
   */
  resolveLeaf(ctx: RequestContext, target: Target): Promise<Target>;
  /**
   * Runs a client's request later, without its connection (a line of a
   * gateway-run batch): the whole lifecycle after auth (before hooks, strategy,
   * interceptors, transport, after hooks, log) with the auth and target the
   * work was accepted with; the answer is read whole. Never throws: refusals
   * come back as their status and envelope. Not counted among the requests
   * `close` waits for: the caller drains its own. Only valid once boot has finished.
   */
  runRequest(request: DetachedRequest): Promise<DetachedResponse>;
  /** Async set-up, awaited before the first request is served. */
  onReady(fn: () => void | Promise<void>): void;
  /** Tear-down on close, run in reverse registration order after in-flight requests ended. */
  onClose(fn: () => void | Promise<void>): void;
  /**
   * Called once when the gateway starts closing, before it waits for in-flight
   * requests: end what would otherwise hold the shutdown for its whole grace
   * period (a long-lived stream a client reconnects, to another instance).
   */
  onDrain(fn: () => void): void;
  /**
   * Whether the gateway wants new traffic: false from `Gateway.markUnready` (an orchestrator is taking it out of
   * rotation, before the listener closes) and through `close`. The readiness route reads it; requests are still
   * served while it is false, until `close`.
   */
  accepting(): boolean;
}
