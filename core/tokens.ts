/**
 * A service token: a symbol that also carries the type of the service
 * registered under it, so `api.resolve(TOKEN)` is typed without a cast.
 * Built with `Symbol.for`, so the same name is the same token in every copy
 * of the SDK.
 */
export type ServiceToken<T> = symbol & { readonly __service?: T };

/** A token for services of type `T`, named `name` (namespaced, e.g. `acme.quota`). */
export function serviceToken<T>(name: string): ServiceToken<T> {
  return Symbol.for(name) as ServiceToken<T>;
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
});
