import { GatewayError } from './errors.js';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Request headers that decide where a request goes upstream, each with the
 * bundled plugin that reads it (named in the refusal, as a hint). A plugin
 * that reads one declares it (`GatewayPlugin.headers`); a request carrying one
 * that no loaded plugin reads is refused (400), never sent somewhere its
 * sender did not choose: a minimal build without `provider-headers` would
 * otherwise send a request meant for a local model to the provider's public
 * host, with the caller's key.
 */
export const ROUTING_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-gateway-provider': 'provider-headers',
  'x-gateway-virtual-key': 'provider-headers',
  'x-gateway-custom-host': 'provider-headers',
  'x-gateway-config': 'config',
  'x-gateway-proxy': 'proxy',
});

/** The routing headers no plugin of `declared` reads, in a fixed order. */
export function unreadRoutingHeaders(declared: ReadonlySet<string>): readonly string[] {
  return Object.freeze(Object.keys(ROUTING_HEADERS).filter((name) => !declared.has(name)));
}

/**
 * Throws the 400 for the first of `unread` the request carries. `accepts` lets the caller take a
 * header itself (the core's one-provider default takes `x-gateway-provider` naming that provider).
 */
export function refuseUnreadRoutingHeaders(headers: IncomingHttpHeaders, unread: readonly string[], accepts: (name: string, value: string) => boolean): void {
  for (const name of unread) {
    const value = headers[name];
    if (value === undefined || value === '') continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (accepts(name, text)) continue;
    throw new GatewayError(
      'invalid_header',
      `${name} chooses where a request goes, but no loaded plugin reads it: load the ${ROUTING_HEADERS[name]} plugin (or one that declares the header), or leave the header out. The request was not sent.`,
      { param: name },
    );
  }
}
