import { spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../bench/children.js';

/*
 * A PostgreSQL primary and a streaming replica of it, on loopback, from the server binaries (Debian's
 * postgresql package: initdb, pg_ctl, pg_basebackup). Their own data directories and ports: the shared test
 * server is not touched. Run as the postgres user when the tests run as root (PostgreSQL refuses root).
 */

function binDir(): string | null {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort().reverse();
    for (const v of versions) {
      const dir = `/usr/lib/postgresql/${v}/bin`;
      if (spawnSync(`${dir}/initdb`, ['--version'], { stdio: 'ignore' }).status === 0) return dir;
    }
  } catch {
    /* not installed */
  }
  return null;
}

/** Whether the PostgreSQL server binaries are here (as `requireService`: skip loudly locally, fail under CI=true). */
export function requirePostgresBinaries(): boolean {
  if (binDir() !== null) return true;
  const message = 'the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are not installed; the read-replica test cannot run';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires them: apt-get install postgresql)`);
  console.warn(`\n!!! SKIPPED: ${message}.\n`);
  return false;
}

/**
 * The user to run a database server as when the tests run as root (PostgreSQL and PgBouncer refuse root): postgres
 * when the packages made one, else nobody; null when not root.
 */
export function unprivilegedUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error('running as root and there is no postgres (or nobody) user to run the server as');
}

export interface ReplicaPair {
  primaryUrl: string;
  replicaUrl: string;
  close(): Promise<void>;
}

/** Starts a primary and a replica streaming from it (database `postgres`, user `postgres`, trust on loopback). */
export async function startPrimaryAndReplica(): Promise<ReplicaPair> {
  const bin = binDir();
  if (bin === null) throw new Error('PostgreSQL binaries are not installed');
  const as = unprivilegedUser();
  const dir = mkdtempSync(join(tmpdir(), 'pg-replica-'));
  if (as !== null) chownSync(dir, as.uid, as.gid);
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(`${bin}/${cmd}`, args, { encoding: 'utf8', timeout: 60_000, ...(as === null ? {} : { uid: as.uid, gid: as.gid }) });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stdout}${r.stderr}`);
  };
  const primary = join(dir, 'primary');
  const replica = join(dir, 'replica');
  const [pPort, rPort] = [await freePort(), await freePort()];
  run('initdb', ['-D', primary, '-U', 'postgres', '-A', 'trust', '--no-sync']);
  appendFileSync(join(primary, 'postgresql.conf'), `\nport = ${pPort}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nfsync = off\n`);
  appendFileSync(join(primary, 'pg_hba.conf'), '\nhost replication all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 trust\n');
  run('pg_ctl', ['-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start']);
  run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(pPort), '-U', 'postgres', '-D', replica, '-R', '-X', 'stream']);
  writeFileSync(join(replica, 'postgresql.auto.conf'), `primary_conninfo = 'host=127.0.0.1 port=${pPort} user=postgres'\nport = ${rPort}\nhot_standby = on\n`, { flag: 'a' });
  run('pg_ctl', ['-D', replica, '-l', join(dir, 'replica.log'), '-w', 'start']);
  return {
    primaryUrl: `postgres://postgres@127.0.0.1:${pPort}/postgres`,
    replicaUrl: `postgres://postgres@127.0.0.1:${rPort}/postgres`,
    async close() {
      for (const d of [replica, primary]) spawnSync(`${bin}/pg_ctl`, ['-D', d, '-m', 'immediate', 'stop'], { stdio: 'ignore', ...(as === null ? {} : { uid: as.uid, gid: as.gid }) });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
