import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import type { buildConnector as BuildConnectorType } from 'undici';
import type { HostResolver, ResolvedAddress } from '../types.js';
import { bareHost, defaultPort, hostNotAllowed, type HostPolicy } from './host-policy.js';
import { buildConnector } from './undici.js';

type Connector = BuildConnectorType.connector;
type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** undici's own default: how long a TCP (and TLS) connection may take to open. */
const CONNECT_TIMEOUT_MS = 10_000;

/** The system resolver (`dns.lookup`, every address, in the order the system gives them). */
export const systemResolver: HostResolver = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Raised by the guarded lookup; the connector, which knows the port, turns it into the 400. */
class AllAddressesRefused extends Error {}

/**
 * A `lookup` for `net.connect` that resolves through `resolve` and hands on
 * only the addresses `allowed` accepts. When the name has addresses but none
 * is allowed, the connection fails before any packet is sent.
 */
function lookupWith(resolve: HostResolver, allowed: (address: string) => boolean): Lookup {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        const candidates = wanted === 0 ? found : found.filter((a) => a.family === wanted);
        const usable: ResolvedAddress[] = candidates.filter((a) => allowed(a.address));
        if (usable.length === 0) {
          const err: NodeJS.ErrnoException =
            candidates.length === 0 ? Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }) : new AllAddressesRefused(hostname);
          callback(err, '');
          return;
        }
        if (options.all === true) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * The undici connector of the upstream client: every new connection is
 * checked against the host policy where the address is known, so a name
 * that resolves (or re-resolves: DNS rebinding) to a refused address never
 * gets a packet sent to it.
 *
 * - An IP literal (which `net.connect` does not look up) is checked here.
 * - An allow-listed name (for this port) connects to whatever it resolves to.
 * - Any other name connects only to the allowed addresses it resolves to;
 *   when there is none, the connection fails with the 400 `host_not_allowed`.
 */
export function policyConnector(policy: HostPolicy, resolve: HostResolver = systemResolver): Connector {
  const open = buildConnector({ timeout: CONNECT_TIMEOUT_MS, lookup: lookupWith(resolve, () => true) as never });
  if (policy.allowsAll) return open;
  const guarded = buildConnector({ timeout: CONNECT_TIMEOUT_MS, lookup: lookupWith(resolve, (address) => policy.allowsAddress(address)) as never });
  return (options, callback) => {
    const host = bareHost(options.hostname);
    const port = options.port === '' || options.port === undefined ? defaultPort(options.protocol) : Number(options.port);
    if (isIP(host) !== 0) {
      if (policy.allowsAddress(host, port)) open(options, callback);
      else callback(hostNotAllowed(host, port, 'is'), null);
      return;
    }
    if (policy.allowsName(host, port)) {
      open(options, callback);
      return;
    }
    guarded(options, (err, socket) => {
      if (err instanceof AllAddressesRefused) callback(hostNotAllowed(host, port, 'resolves only to'), null);
      else if (err !== null) callback(err, null);
      else callback(null, socket!);
    });
  };
}
