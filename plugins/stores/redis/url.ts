/** A Redis address: one node, Sentinels and the primary's name, or a cluster's seed nodes. */
export interface RedisTopology {
  kind: 'single' | 'sentinel' | 'cluster';
  nodes: Array<{ host: string; port: number }>;
  /** The primary's name (Sentinel). */
  name?: string;
  /** Database number (one node only; a cluster has only 0). */
  db?: number;
  /** Credentials from the URL's user info. */
  auth: { username?: string; password?: string };
  /** `rediss…`: TLS. */
  tls: boolean;
}

const SCHEMES: Record<string, { kind: RedisTopology['kind']; tls: boolean; port: number }> = {
  'redis:': { kind: 'single', tls: false, port: 6379 },
  'rediss:': { kind: 'single', tls: true, port: 6379 },
  'redis+cluster:': { kind: 'cluster', tls: false, port: 6379 },
  'rediss+cluster:': { kind: 'cluster', tls: true, port: 6379 },
  'redis+sentinel:': { kind: 'sentinel', tls: false, port: 26379 },
  'rediss+sentinel:': { kind: 'sentinel', tls: true, port: 26379 },
};

/**
 * Reads `redis://[user:pass@]host[:port][/db]`, `redis+cluster://[user:pass@]h1:p1,h2:p2` and
 * `redis+sentinel://[user:pass@]h1:p1,h2:p2/<primary name>` (`rediss…` for TLS). The error never repeats the URL
 * (it may hold a password).
 */
export function parseRedisUrl(url: string): RedisTopology {
  const scheme = /^[a-z+]+:/i.exec(url)?.[0]?.toLowerCase() ?? '';
  const known = SCHEMES[scheme];
  if (known === undefined) throw new Error(`redis: the URL's scheme must be redis:, rediss:, redis+cluster: or redis+sentinel: (got "${scheme || 'none'}")`);
  const rest = url.slice(scheme.length).replace(/^\/\//, '');
  const at = rest.lastIndexOf('@', rest.indexOf('/') === -1 ? rest.length : rest.indexOf('/'));
  const userInfo = at === -1 ? '' : rest.slice(0, at);
  const afterUser = at === -1 ? rest : rest.slice(at + 1);
  const slash = afterUser.indexOf('/');
  const hosts = slash === -1 ? afterUser : afterUser.slice(0, slash);
  const path = slash === -1 ? '' : decodeURIComponent(afterUser.slice(slash + 1).split('?')[0]!);
  const nodes = hosts.split(',').filter((h) => h !== '').map((h) => node(h, known.port));
  if (nodes.length === 0) throw new Error('redis: the URL names no host');
  if (known.kind === 'single' && nodes.length > 1) throw new Error('redis: a redis:// URL names one host; several are a cluster (redis+cluster://) or Sentinels (redis+sentinel://)');
  const auth: RedisTopology['auth'] = {};
  if (userInfo !== '') {
    const colon = userInfo.indexOf(':');
    const user = decodeURIComponent(colon === -1 ? userInfo : userInfo.slice(0, colon));
    const password = colon === -1 ? '' : decodeURIComponent(userInfo.slice(colon + 1));
    // redis://:password@host is the classic form (no user name): AUTH with the password only.
    if (colon === -1) auth.password = user;
    else {
      if (user !== '') auth.username = user;
      if (password !== '') auth.password = password;
    }
  }
  const topology: RedisTopology = { kind: known.kind, nodes, auth, tls: known.tls };
  if (known.kind === 'sentinel') {
    if (path === '') throw new Error('redis: a redis+sentinel:// URL ends with the primary\'s name (redis+sentinel://host:26379/mymaster)');
    topology.name = path;
  } else if (known.kind === 'single' && path !== '') {
    const db = Number(path);
    if (!Number.isInteger(db) || db < 0) throw new Error('redis: the path of a redis:// URL is a database number');
    topology.db = db;
  }
  return topology;
}

function node(text: string, defaultPort: number): { host: string; port: number } {
  // [::1]:6379, or host:port, or host.
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6 !== null) return { host: v6[1]!, port: v6[2] === undefined ? defaultPort : Number(v6[2]) };
  const colon = text.lastIndexOf(':');
  if (colon === -1) return { host: text, port: defaultPort };
  const port = Number(text.slice(colon + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('redis: a port in the URL is not a number from 1 to 65535');
  return { host: text.slice(0, colon), port };
}
