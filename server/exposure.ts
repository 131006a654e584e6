import { BlockList, isIP, type AddressInfo } from 'node:net';

/*
 * Who can reach the server, and whether it asks them for a key. A config
 * without an auth plugin (the README's plugin example, a trimmed copy of the
 * default) used to start on 0.0.0.0 and answer anyone with 200, spending the
 * provider credentials it holds. Now such a gateway serves only this machine
 * unless the server config says `"auth": "none"`, and says at every start
 * that it serves unauthenticated requests.
 */

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
// Checked as IPv6, this also covers the IPv4-mapped loopback (::ffff:127.0.0.1).
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether a listen address reaches this machine only: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const family = isIP(bare);
  return family !== 0 && LOOPBACK.check(bare, family === 6 ? 'ipv6' : 'ipv4');
}

/** Whether a bound address is every interface of the machine. */
export function isAllInterfaces(address: string): boolean {
  return address === '0.0.0.0' || address === '::';
}

/** The URL of an address as bound: `http://0.0.0.0:8787`, `http://[::1]:8787`. */
export function boundUrl(address: AddressInfo): string {
  return `http://${isIP(address.address) === 6 ? `[${address.address}]` : address.address}:${address.port}`;
}

/** A URL this machine reaches the server at: loopback when it listens on every interface, else the address bound. */
export function localUrl(address: AddressInfo): string {
  if (address.address === '0.0.0.0') return `http://127.0.0.1:${address.port}`;
  if (address.address === '::') return `http://[::1]:${address.port}`;
  return boundUrl(address);
}

/** The start line's address: the one bound, and on every interface, how to reach it from this machine. */
export function describeListening(address: AddressInfo): string {
  const url = boundUrl(address);
  return isAllInterfaces(address.address) ? `${url} (all interfaces; from this machine ${localUrl(address)})` : url;
}

export interface AuthSetup {
  /** The plugins that tapped the auth hook (`gateway.hooks.auth.taps`); empty when no request is authenticated. */
  authenticators: readonly string[];
  /** The server config's `"auth": "none"`. */
  authNone: boolean;
  /** The address the server is about to listen on. */
  host: string;
}

/**
 * The start rule. Throws, naming the fixes, when nothing authenticates
 * requests and the address is not loopback, unless `"auth": "none"`; or when
 * `"auth": "none"` is set beside plugins that do authenticate (one of the two
 * is a mistake). Returns the warning to give at every start when requests are
 * served unauthenticated, else null.
 */
export function checkAuthSetup(setup: AuthSetup): string | null {
  const open = setup.authenticators.length === 0;
  if (setup.authNone && !open) {
    throw new Error(
      `The server config says "auth": "none", but ${setup.authenticators.join(', ')} authenticate${setup.authenticators.length === 1 ? 's' : ''} requests. ` +
        'Remove "auth": "none" to keep authentication, or remove those plugins to serve without it.',
    );
  }
  if (!open) return null;
  if (!setup.authNone && !isLoopbackHost(setup.host)) {
    throw new Error(
      `Refusing to serve unauthenticated requests on ${setup.host}${isAllInterfaces(setup.host) ? ' (all interfaces)' : ''}: ` +
        'no plugin in the server config authenticates requests, so anyone who can reach the gateway could use it and the provider credentials it holds. ' +
        'Add an auth plugin to "plugins" ({ "name": "auth-static" } with GATEWAY_API_KEYS, or "control-plane" for stored keys), ' +
        'listen on a loopback address ("host": "127.0.0.1"), ' +
        'or set "auth": "none" at the top of the server config to serve without authentication on purpose.',
    );
  }
  return setup.authNone
    ? 'the gateway serves unauthenticated requests ("auth": "none" in the server config): anyone who can reach it can use it and the provider credentials it holds'
    : 'the gateway serves unauthenticated requests: no plugin in the server config authenticates them; it listens on a loopback address only, so only this machine can reach it';
}
