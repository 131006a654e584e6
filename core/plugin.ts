import type { Logger } from 'pino';
import type { GatewayHooks } from './hooks.js';
import type { Registry } from './registry.js';
import type { RouteTable } from './router.js';
import type { Interceptor, Provider, Strategy, GatewayOptions } from './types.js';
import type { UpstreamClient } from './upstream/client.js';
import type { InternalRequest, InternalResponse } from './pipeline.js';

/**
 * A plugin: a name and an `apply` that registers taps, routes, providers,
 * strategies or services. `apply` runs once at boot and must be synchronous;
 * async set-up (connecting to a store, running migrations) goes in `api.onReady`.
 */
export interface GatewayPlugin {
  /** Unique, stable name, used in logs and errors. */
  readonly name: string;
  apply(api: PluginAPI): void;
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

/** Everything a plugin may touch. Nothing here is valid to call after boot except `logger`, `upstream` and `resolve`. */
export interface PluginAPI extends Registries {
  readonly hooks: GatewayHooks;
  readonly routes: RouteTable;
  /** Root logger; secrets are redacted at the paths in `REDACT_PATHS`. */
  readonly logger: Logger;
  /** Core options with defaults filled in. */
  readonly options: Readonly<Required<GatewayOptions>>;
  /** The pooled upstream HTTP client, for plugins that call out (webhooks, embeddings). */
  readonly upstream: UpstreamClient;
  /**
   * Wraps every leaf upstream call (retry, timeout, breaker). Lower `stage` is outermost.
   * The chain is composed once, when boot finishes.
   */
  addInterceptor(name: string, interceptor: Interceptor, stage?: number): void;
  /** Registers a shared service under a token (see `TOKENS`). */
  provide<T>(token: symbol, value: T): void;
  /** Returns a service registered with `provide`. Throws when absent. */
  resolve<T>(token: symbol): T;
  /**
   * Makes a request through the gateway's own strategy, interceptors and
   * transport (logged, marked internal), e.g. an embedding for a cache.
   * Only valid once boot has finished.
   */
  internalRequest(request: InternalRequest): Promise<InternalResponse>;
  /** Async set-up, awaited before the first request is served. */
  onReady(fn: () => void | Promise<void>): void;
  /** Tear-down on close, run in reverse registration order after in-flight requests ended. */
  onClose(fn: () => void | Promise<void>): void;
}
