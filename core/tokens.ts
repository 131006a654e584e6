/**
 * Dependency-injection tokens. tsyringe is used at the composition root only
 * (createGateway); plugins reach shared services through `api.provide` and
 * `api.resolve` with these or their own symbols.
 */
export const TOKENS = Object.freeze({
  Logger: Symbol.for('gateway.logger'),
  Options: Symbol.for('gateway.options'),
  Hooks: Symbol.for('gateway.hooks'),
  Registries: Symbol.for('gateway.registries'),
  Routes: Symbol.for('gateway.routes'),
  Upstream: Symbol.for('gateway.upstream'),
});
