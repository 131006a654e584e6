import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../bench/children.js';
import { unprivilegedUser } from './postgres-replica.js';

/*
 * PgBouncer on loopback in transaction mode, in front of the test PostgreSQL (Debian's `pgbouncer` package;
 * .ci/run installs it). A small server pool, so the gateway's many client connections share a few server
 * connections and any reliance on session state shows.
 */

const BIN = ['/usr/sbin/pgbouncer', 'pgbouncer'];

function binary(): string | null {
  for (const b of BIN) if (spawnSync(b, ['--version'], { stdio: 'ignore' }).status === 0) return b;
  return null;
}

/** Whether PgBouncer is installed (as `requireService`: skip loudly locally, fail under CI=true). */
export function requirePgBouncer(): boolean {
  if (binary() !== null) return true;
  const message = 'pgbouncer is not installed; the transaction-pooler tests cannot run';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true requires it: apt-get install pgbouncer)`);
  console.warn(`\n!!! SKIPPED: ${message}. Install pgbouncer to run them.\n`);
  return false;
}

const open = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = new Socket();
    s.once('error', () => resolve(false));
    s.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
  });

export interface PgBouncerHandle {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` through the pooler. */
  url: string;
  /** Asks PgBouncer how many server connections it holds to the database (SHOW POOLS: sv_active + sv_idle + sv_used). */
  close(): Promise<void>;
}

/** PgBouncer in transaction mode in front of `target` (host, port, database), with `poolSize` server connections. */
export async function startPgBouncer(target: { host: string; port: number; database: string; user: string }, poolSize = 3): Promise<PgBouncerHandle> {
  const bin = binary();
  if (bin === null) throw new Error('pgbouncer is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const port = await freePort();
  writeFileSync(join(dir, 'users.txt'), `"${target.user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${target.database} = host=${target.host} port=${target.port} dbname=${target.database} user=${target.user}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as root (CI's containers), it runs as the postgres (or nobody) user.
  const user = unprivilegedUser();
  if (user !== null) for (const f of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, f), user.uid, user.gid);
  const child: ChildProcess = spawn(bin, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...(user === null ? {} : { uid: user.uid, gid: user.gid }) });
  const until = Date.now() + 10_000;
  while (!(await open(port))) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`pgbouncer did not start (exit ${child.exitCode})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `postgres://${target.user}@127.0.0.1:${port}/${target.database}`,
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
