import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LOOPBACK_ENV } from './outbound.js';

const SHARED_STATE_ENV = new Set(['REDIS_URL', 'DATABASE_URL', 'GATEWAY_REDIS_PREFIX', 'GATEWAY_DATABASE_SCHEMA']);

export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts the server as its own process; resolves once it listens. By default
 * `server/main.ts` through tsx; with `built`, `dist/server/main.js` as
 * `npm start` runs it (build first), or the `main.js` given. Loopback
 * upstreams are allowed (GATEWAY_ALLOW_HOSTS) unless `env` says otherwise;
 * the test's own REDIS_URL and DATABASE_URL are not passed on unless in `env`.
 * `source`: another checkout's `server/main.ts` to run through tsx (an earlier version, for an upgrade).
 */
export function startProcess(args: string[], env: Record<string, string>, options: { built?: boolean | string; source?: string } = {}): Promise<GatewayProcess> {
  const entry =
    typeof options.built === 'string' ? [options.built] : options.built === true ? ['dist/server/main.js'] : ['--import', 'tsx', options.source ?? 'server/main.ts'];
  // REDIS_URL and DATABASE_URL switch the default config to shared stores: only a test that passes them gets them.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !SHARED_STATE_ENV.has(k)));
  const child = spawn(process.execPath, [...entry, ...args], {
    env: { ...inherited, PORT: '0', GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-proc-')), ...LOOPBACK_ENV, ...env },
    // Another checkout runs from its own folder, so tsx compiles it with that checkout's tsconfig.
    ...(options.source === undefined ? {} : { cwd: dirname(dirname(options.source)) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start: ${out}`));
    }, 20_000);
    child.stdout!.on('data', () => {
      // The address really bound (0.0.0.0 unless the config says otherwise); the tests connect to 127.0.0.1 on its port.
      const m = out.match(/gateway listening on http:\/\/(?:\[[^\]]*\]|[^\s:/]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), output: () => out, exited });
      }
    });
    void exited.then((code) => reject(new Error(`server exited early (${code}): ${out}`)));
  });
}
