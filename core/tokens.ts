/**
 * A service token: a symbol that also carries the type of the service
 * registered under it, so `api.resolve(TOKEN)` is typed without a cast.
 * Built with `Symbol.for`, so the same name is the same token in every copy
 * of the SDK.
 */
export type ServiceToken<T> = symbol & { readonly __service?: T };

/** The bundled plugin that provides each token, where one was named: said when a requirement is missing. */
const PROVIDED_BY = new Map<symbol, string>();

/**
 * A token for services of type `T`, named `name` (namespaced, e.g. `acme.quota`).
 * `providedBy` names the plugin that provides it, for the boot error of a
 * plugin that requires it when none is loaded.
 */
export function serviceToken<T>(name: string, providedBy?: string): ServiceToken<T> {
  const token = Symbol.for(name) as ServiceToken<T>;
  if (providedBy !== undefined) PROVIDED_BY.set(token, providedBy);
  return token;
}

/** How a boot error names a token: its name, and the plugin that provides it when one was named. */
export function describeToken(token: symbol): string {
  const by = PROVIDED_BY.get(token);
  return `"${token.description ?? String(token)}"${by === undefined ? '' : ` (provided by the ${by} plugin)`}`;
}

/**
 * Dependency-injection tokens of the core's own services. tsyringe is used at
 * the composition root only (createGateway); plugins reach shared services
 * through `api.provide` and `api.resolve` with these, the SDK's (`sdk/tokens.ts`)
 * or their own.
 */
export const TOKENS = Object.freeze({
  Logger: Symbol.for('gateway.logger'),
  Options: Symbol.for('gateway.options'),
  Hooks: Symbol.for('gateway.hooks'),
  Registries: Symbol.for('gateway.registries'),
  Routes: Symbol.for('gateway.routes'),
  Upstream: Symbol.for('gateway.upstream'),
  /** This gateway's error codes (the core's and its plugins'), to answer a plugin code built without its spec. */
  ErrorCodes: Symbol.for('gateway.error-codes'),
});
