import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Real Redis topologies on loopback for tests and the fault drill, started from the `redis-server` binary
 * (Debian's `redis-server` package; .ci/run installs it): a Redis Cluster of primaries with a replica each,
 * and a primary with a replica watched by three Sentinels. Every process binds 127.0.0.1, keeps nothing on
 * disk but its cluster or Sentinel file in a temporary directory, and is killed by `close()`.
 */

/** Whether the Redis binaries are installed. Absent locally: the caller skips loudly; under CI=true it fails. */
export function redisBinariesPresent(): boolean {
  const ok = (bin: string) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0;
  return ok('redis-server') && ok('redis-cli');
}

/** Whether tests needing local Redis binaries can run (as `requireService`: skip loudly, fail under CI=true). */
export function requireRedisBinaries(): boolean {
  if (redisBinariesPresent()) return true;
  const message = 'redis-server and redis-cli are not installed; the Redis Cluster and Sentinel tests cannot run';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires them: apt-get install redis-server)`);
  console.warn(`\n!!! SKIPPED: ${message}. Install redis-server to run them.\n`);
  return false;
}

/** A TCP port free on 127.0.0.1 now, whose cluster bus port (+10000) is free too. */
async function freePort(): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 15000);
    if ((await tryPort(port)) && (await tryPort(port + 10000))) return port;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs redis-cli against a port; its output. */
export function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
  return (r.stdout ?? '') + (r.stderr ?? '');
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

interface RedisProcess {
  port: number;
  child: ChildProcess | null;
  args: string[];
}

function startServer(args: string[], dir: string): ChildProcess {
  return spawn('redis-server', args, { cwd: dir, stdio: 'ignore' });
}

function stop(p: RedisProcess): Promise<void> {
  const child = p.child;
  p.child = null;
  if (child === null || child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** The `cluster nodes` lines of the primaries not marked failed, as `via` sees them, split into fields. */
function liveMasters(via: number): string[][] {
  return cli(via, 'cluster', 'nodes')
    .split('\n')
    .map((l) => l.trim().split(' '))
    .filter((f) => f[2]?.includes('master') && !f[2].includes('fail'));
}

const portOf = (fields: string[]): number => Number(fields[1]!.split('@')[0]!.split(':').at(-1));

/** Waits until every replica among `ports` has its link to its primary up. */
async function replicasInSync(ports: number[]): Promise<void> {
  await until(
    'the replicas to sync',
    () =>
      ports.every((p) => {
        const info = cli(p, 'info', 'replication');
        return info.includes('role:master') || info.includes('master_link_status:up');
      }),
    30_000,
  );
}

export interface RedisClusterHandle {
  /** `redis+cluster://` with every node as a seed. */
  url: string;
  ports: number[];
  /** The port of the primary that holds `key`'s slot now. */
  primaryOf(key: string): number;
  /** The ports of the primaries now. */
  primaries(): number[];
  /** Kills a node (SIGKILL, as a crash). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again (it rejoins as a replica of whoever took over). */
  restart(port: number): Promise<void>;
  /** Waits until every slot is served again (`cluster_state:ok` seen from `via`). */
  healthy(via?: number): Promise<void>;
  /** Waits until `port` is no primary any more and every slot is served: its replica took over. */
  failedOver(port: number): Promise<void>;
  close(): Promise<void>;
}

/** A Redis Cluster of `primaries` primaries with one replica each, on loopback. */
export async function startRedisCluster(primaries = 3): Promise<RedisClusterHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const nodes: RedisProcess[] = [];
  for (let i = 0; i < primaries * 2; i++) {
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1000', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
    nodes.push({ port, args, child: startServer(args, dir) });
  }
  const ports = nodes.map((n) => n.port);
  for (const p of ports) await until(`redis ${p}`, () => cli(p, 'ping').includes('PONG'));
  const created = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000 });
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
  const handle: RedisClusterHandle = {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    ports,
    primaryOf(key) {
      const via = nodes.find((n) => n.child !== null)!.port;
      const slot = Number(cli(via, 'cluster', 'keyslot', key).trim());
      for (const f of liveMasters(via)) {
        for (const range of f.slice(8)) {
          const [a, b] = range.split('-').map(Number);
          if (slot >= a! && slot <= (b ?? a)!) return portOf(f);
        }
      }
      throw new Error(`no primary serves ${key}`);
    },
    primaries() {
      const via = nodes.find((n) => n.child !== null)?.port;
      return via === undefined ? [] : liveMasters(via).map(portOf);
    },
    async kill(port) {
      await stop(nodes.find((n) => n.port === port)!);
    },
    async restart(port) {
      const n = nodes.find((x) => x.port === port)!;
      n.child = startServer(n.args, dir);
      await until(`redis ${port}`, () => cli(port, 'ping').includes('PONG'));
      await replicasInSync([port]);
    },
    async healthy(via) {
      const from = via ?? nodes.find((n) => n.child !== null)!.port;
      await until('cluster_state:ok', () => cli(from, 'cluster', 'info').includes('cluster_state:ok') && handle.primaries().length === primaries, 30_000);
    },
    async failedOver(port) {
      await until(`a replica to take over from ${port}`, () => {
        const via = nodes.find((n) => n.child !== null && n.port !== port)!.port;
        return !handle.primaries().includes(port) && cli(via, 'cluster', 'info').includes('cluster_state:ok');
      }, 30_000);
    },
    async close() {
      await Promise.all(nodes.map(stop));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await handle.healthy();
  // Every node agrees on the slots before a client asks (a seed that lags would send it elsewhere).
  await until('every node to know the slots', () => ports.every((p) => cli(p, 'cluster', 'info').includes('cluster_state:ok')), 30_000);
  // Every replica has synced: one that never did is too stale to be promoted, and a failover would never come.
  await replicasInSync(ports);
  return handle;
}

export interface RedisSentinelHandle {
  /** `redis+sentinel://` with the three Sentinels and the primary's name. */
  url: string;
  name: string;
  /** The port of the primary the Sentinels name now. */
  primary(): number;
  /** Kills the primary (SIGKILL) and waits until the Sentinels name another. */
  failover(): Promise<{ from: number; to: number; ms: number }>;
  close(): Promise<void>;
}

/** A primary and a replica watched by three Sentinels (quorum 2), on loopback. */
export async function startRedisSentinel(name = 'gwprimary'): Promise<RedisSentinelHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
  const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
  const primaryPort = await freePort();
  const replicaPort = await freePort();
  const servers: RedisProcess[] = [
    { port: primaryPort, args: ['--port', String(primaryPort), ...base], child: null },
    { port: replicaPort, args: ['--port', String(replicaPort), '--replicaof', '127.0.0.1', String(primaryPort), ...base], child: null },
  ];
  for (const s of servers) s.child = startServer(s.args, dir);
  for (const s of servers) await until(`redis ${s.port}`, () => cli(s.port, 'ping').includes('PONG'));
  await until('the replica to sync', () => cli(replicaPort, 'info', 'replication').includes('master_link_status:up'));
  const sentinels: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'protected-mode no',
        `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const args = [file, '--sentinel'];
    sentinels.push({ port, args, child: startServer(args, dir) });
  }
  for (const s of sentinels) await until(`sentinel ${s.port}`, () => cli(s.port, 'ping').includes('PONG'));
  const named = () => Number(cli(sentinels[0]!.port, 'sentinel', 'get-master-addr-by-name', name).trim().split('\n')[1]);
  // Seen, and answering the first Sentinel's INFO with its link to the primary up: until then that Sentinel has no
  // replica it would promote, and a failover asked of it is refused (NOGOODSLAVE).
  await until('the Sentinels to see the replica in sync', () => {
    const lines = cli(sentinels[0]!.port, 'sentinel', 'replicas', name).split('\n').map((l) => l.trim());
    const value = (key: string) => lines[lines.indexOf(key) + 1];
    return lines.includes(String(replicaPort)) && value('flags') === 'slave' && value('master-link-status') === 'ok';
  });
  return {
    url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${name}`,
    name,
    primary: named,
    async failover() {
      const from = named();
      const started = Date.now();
      await stop(servers.find((s) => s.port === from)!);
      await until('a new primary', () => {
        const now = named();
        return now !== from && Number.isInteger(now) && cli(now, 'role').startsWith('master');
      }, 30_000);
      return { from, to: named(), ms: Date.now() - started };
    },
    async close() {
      await Promise.all([...sentinels, ...servers].map(stop));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
