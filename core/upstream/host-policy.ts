import { BlockList, isIP } from 'node:net';
import { GatewayError } from '../errors.js';
import type { OutboundOptions } from '../types.js';
import { upstreamUrlProblem } from './urls.js';

/**
 * Addresses the gateway does not connect to unless told to: everything that
 * is not a unicast address on the public internet. [address, prefix length].
 */
const REFUSED_IPV4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", with the unspecified address (which reaches the local host)
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, with the broadcast address
];

const REFUSED_IPV6: ReadonlyArray<readonly [string, number]> = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible addresses (::127.0.0.1)
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4, which embeds any IPv4 address
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

/*
 * One list for every refused range. node's BlockList matches an IPv4-mapped
 * IPv6 address (::ffff:127.0.0.1) against the IPv4 rules itself; the NAT64
 * prefix (64:ff9b::/96) embeds an IPv4 address too, so each IPv4 rule is
 * repeated under it: 64:ff9b::8.8.8.8 stays allowed, 64:ff9b::10.0.0.1 does not.
 */
const REFUSED = new BlockList();
for (const [address, prefix] of REFUSED_IPV4) {
  REFUSED.addSubnet(address, prefix, 'ipv4');
  REFUSED.addSubnet(`64:ff9b::${address}`, 96 + prefix, 'ipv6');
}
for (const [address, prefix] of REFUSED_IPV6) REFUSED.addSubnet(address, prefix, 'ipv6');

/** A zone id (fe80::1%eth0) only ever qualifies a link-local address; the address is what counts. */
function withoutZone(address: string): string {
  const zone = address.indexOf('%');
  return zone === -1 ? address : address.slice(0, zone);
}

const family = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** True for a loopback, private, link-local, multicast, unspecified, broadcast, documentation or otherwise reserved address. */
export function isRefusedAddress(address: string): boolean {
  const bare = withoutZone(address);
  if (isIP(bare) === 0) return true;
  try {
    return REFUSED.check(bare, family(bare));
  } catch {
    // Not an address BlockList can read: never connect to it.
    return true;
  }
}

/** `localhost` and the names under it, which resolve to loopback by definition (RFC 6761, section 6.3). */
function isLoopbackName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}

/** How many passed URLs a policy keeps: more distinct URLs than this (a caller varying the path, say) start the set again. */
const PASSED_URLS_MAX = 1024;

/** How to allow a refused host, for the message a caller gets. */
const HOW_TO_ALLOW = 'GATEWAY_ALLOW_HOSTS for the bundled server, options.outbound.allowHosts for createGateway';

/** The default port of an http(s) URL whose port is left out. */
export function defaultPort(protocol: string): number {
  return protocol === 'https:' ? 443 : 80;
}

/** `host:port` as a URL writes it (`[::1]:8000` for IPv6). */
function hostPort(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** `[::1]` → `::1`: URL hostnames keep IPv6 brackets, addresses do not. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * One allow-list entry, parsed:
 * a host name (`ollama.lan`), every name under a domain (`*.internal.example`),
 * an IP address (`10.0.0.5`, `[fd00::5]` or `fd00::5`), each with an optional
 * port (`localhost:11434`, `10.0.0.5:8000`, `[::1]:8000`), or an address
 * range (`10.0.0.0/8`, `fd00::/8`, for any port).
 */
export type AllowEntry =
  | { kind: 'name'; name: string; subdomains: boolean; port: number | null }
  | { kind: 'address'; address: string; port: number | null }
  | { kind: 'range'; address: string; prefix: number };

const PORT = /^\d{1,5}$/;
/** Characters that would make an entry more than a host (a path, a query, user info, a second entry). */
const NOT_A_HOST = /[/?#@\s\\,]/;

/** Parses an allow-list entry, or explains what is wrong with it. */
export function parseAllowEntry(raw: string): AllowEntry | string {
  const entry = raw.trim().toLowerCase();
  if (entry === '') return 'is empty';
  if (entry.includes('://')) return 'is a URL: give the host and, optionally, its port (e.g. ollama.lan:11434)';
  const slash = entry.indexOf('/');
  if (slash !== -1) {
    const address = entry.slice(0, slash);
    const bits = entry.slice(slash + 1);
    const version = isIP(address);
    const max = version === 6 ? 128 : 32;
    if (version === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) return 'is not an address range (e.g. 10.0.0.0/8 or fd00::/8)';
    return { kind: 'range', address, prefix: Number(bits) };
  }
  if (isIP(entry) === 6) return { kind: 'address', address: entry, port: null };

  let host = entry;
  let port: number | null = null;
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    const rest = close === -1 ? '' : entry.slice(close + 1);
    host = close === -1 ? '' : entry.slice(1, close);
    if (isIP(host) !== 6) return 'has brackets around something that is not an IPv6 address';
    if (rest !== '') {
      if (!rest.startsWith(':')) return 'has text after the IPv6 address';
      port = portOf(rest.slice(1));
    }
    return port === -1 ? 'has a port that is not from 1 to 65535' : { kind: 'address', address: host, port };
  }
  const colon = entry.lastIndexOf(':');
  if (colon !== -1) {
    host = entry.slice(0, colon);
    port = portOf(entry.slice(colon + 1));
    if (port === -1) return 'has a port that is not from 1 to 65535';
  }
  if (host === '' || NOT_A_HOST.test(host) || host.includes(':')) return 'is not a host, host:port or address range';
  const subdomains = host.startsWith('*.');
  const name = normalHost(subdomains ? host.slice(2) : host);
  if (name === null) return 'is not a valid host name';
  if (subdomains) return isIP(name) !== 0 ? 'puts *. before an address' : { kind: 'name', name, subdomains, port };
  return isIP(name) === 4 ? { kind: 'address', address: name, port } : { kind: 'name', name, subdomains, port };
}

/** What is wrong with an allow-list entry, or null (for schemas that validate the server config and the environment). */
export function allowEntryProblem(raw: string): string | null {
  const parsed = parseAllowEntry(raw);
  return typeof parsed === 'string' ? parsed : null;
}

function portOf(text: string): number {
  const port = PORT.test(text) ? Number(text) : -1;
  return port >= 1 && port <= 65535 ? port : -1;
}

/**
 * A host as the URL parser reads it: lower case, IDN in punycode, IPv4 in
 * dotted decimal (`0x7f.1` and `2130706433` are 127.0.0.1), no trailing dot.
 */
function normalHost(host: string): string | null {
  try {
    const name = new URL(`http://${host}/`).hostname;
    return name.endsWith('.') ? name.slice(0, -1) : name;
  } catch {
    return null;
  }
}

/**
 * Where the gateway may connect on a caller's behalf. Everything on the
 * public internet is allowed; loopback, private, link-local, multicast and
 * reserved addresses (see {@link isRefusedAddress}) only when the host is on
 * the allow-list or `allowPrivateHosts` is set. The upstream client asks it
 * twice: when a URL is about to be called (IP literals and scheme, so a
 * refusal is a clean 400 before any connection) and when a connection is
 * opened, on the addresses a name resolved to (so DNS rebinding cannot get
 * round it).
 */
export class HostPolicy {
  /** True when every address is allowed (`allowPrivateHosts`). */
  readonly allowsAll: boolean;
  readonly #names: Array<Extract<AllowEntry, { kind: 'name' }>> = [];
  /** Allow-listed addresses and ranges without a port. */
  readonly #anyPort = new BlockList();
  /** Allow-listed addresses with a port, by port. */
  readonly #byPort = new Map<number, BlockList>();
  /**
   * URLs {@link check} has passed. The policy never changes, so a URL that passed once always passes: the
   * custom-host header and the upstream client check the same few URLs on every request, and parsing one
   * (a URL, then a BlockList match) costs more than the rest of the check. Refusals are not kept.
   */
  readonly #passed = new Set<string>();

  /** @throws Error naming the first allow-list entry that is not a host, host:port or range. */
  constructor(options: Pick<OutboundOptions, 'allowPrivateHosts' | 'allowHosts'> = {}) {
    this.allowsAll = options.allowPrivateHosts === true;
    for (const raw of options.allowHosts ?? []) {
      const entry = parseAllowEntry(raw);
      if (typeof entry === 'string') throw new Error(`outbound.allowHosts: "${raw}" ${entry}`);
      if (entry.kind === 'name') this.#names.push(entry);
      else if (entry.kind === 'range') this.#anyPort.addSubnet(entry.address, entry.prefix, family(entry.address));
      else if (entry.port === null) this.#anyPort.addAddress(entry.address, family(entry.address));
      else {
        let list = this.#byPort.get(entry.port);
        if (list === undefined) this.#byPort.set(entry.port, (list = new BlockList()));
        list.addAddress(entry.address, family(entry.address));
      }
    }
  }

  /** Whether a host name (as the URL parser wrote it) is on the allow-list for this port: then any address it resolves to is allowed. */
  allowsName(hostname: string, port: number): boolean {
    if (this.#names.length === 0) return false;
    const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
    return this.#names.some((rule) => (rule.port === null || rule.port === port) && (rule.subdomains ? name.endsWith(`.${rule.name}`) : name === rule.name));
  }

  /**
   * Whether the gateway may connect to this address: a public one, or one the
   * allow-list names. Without a port (a name being resolved), only entries
   * without a port count.
   */
  allowsAddress(address: string, port?: number): boolean {
    if (this.allowsAll || !isRefusedAddress(address)) return true;
    const bare = withoutZone(address);
    if (isIP(bare) === 0) return false;
    const fam = family(bare);
    if (this.#anyPort.check(bare, fam)) return true;
    return port !== undefined && (this.#byPort.get(port)?.check(bare, fam) ?? false);
  }

  /**
   * Throws the 400 for a URL the gateway will not call: not http(s), user
   * info, or an IP literal that is refused. A host name passes here; its
   * addresses are checked when a connection to it is opened.
   */
  check(rawUrl: string, param: string | null = null): void {
    if (this.#passed.has(rawUrl)) return;
    const problem = upstreamUrlProblem(rawUrl);
    if (problem !== null) throw new GatewayError('invalid_request', `The upstream URL ${problem}.`, { param });
    const url = new URL(rawUrl);
    const host = bareHost(url.hostname);
    const port = url.port === '' ? defaultPort(url.protocol) : Number(url.port);
    if (isIP(host) !== 0) {
      if (!this.allowsAddress(host, port)) throw hostNotAllowed(host, port, 'is', param);
    } else if (isLoopbackName(host) && !this.allowsName(host, port) && !this.allowsAddress('127.0.0.1', port) && !this.allowsAddress('::1', port)) {
      // A name that is loopback by definition (RFC 6761) is known without a lookup: refused here, as an address is,
      // so a stored URL naming it is refused when it is written, not only when it is first called.
      throw hostNotAllowed(host, port, 'names', param);
    }
    if (this.#passed.size >= PASSED_URLS_MAX) this.#passed.clear();
    this.#passed.add(rawUrl);
  }
}

/**
 * The 400 for a refused host: names it (never user info, which never gets
 * this far) and says how to allow it. `how` is `is` for an address, `names`
 * for `localhost` (loopback by definition), or `resolves only to` for a name
 * whose addresses were all refused.
 */
export function hostNotAllowed(host: string, port: number, how: 'is' | 'names' | 'resolves only to', param: string | null = null): GatewayError {
  const where = hostPort(host, port);
  return new GatewayError(
    'host_not_allowed',
    `The gateway does not connect to ${where}: it ${how} a loopback, private, link-local or reserved address. ` +
      `To allow it (a self-hosted model, say), add "${where}" to the outbound allow-list (${HOW_TO_ALLOW}).`,
    { param },
  );
}
