import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../server/server.js';
import type { ServerConfig } from '../../server/schema.js';
import { DEFAULT_CONFIG } from '../../server/default-config.js';
import { LOOPBACK_ENV } from './outbound.js';

export const GATEWAY_KEY = 'test-gateway-key-0001';
/** The control plane's first admin key in test servers (so none is generated and printed). */
export const BOOTSTRAP_KEY = 'test-bootstrap-admin-key-0001';

// The kit's logger: the same one plugin authors' tests get.
export { memoryLogger } from '../../server/testing/harness.js';
import { memoryLogger } from '../../server/testing/harness.js';

/**
 * Starts the real server (default config unless given) on an ephemeral port, logging to memory;
 * loopback upstreams allowed unless `env` says otherwise. Every request gets its stdout line
 * (`GATEWAY_REQUEST_LOG=all`), since tests assert on them; the default's failures-only stdout is
 * tested in test/server/default-logging.test.ts.
 */
export async function startTestServer(
  options: { config?: ServerConfig; env?: Record<string, string> } = {},
): Promise<RunningServer & { logs: ReturnType<typeof memoryLogger>; dataDir: string }> {
  const logs = memoryLogger();
  // Each server gets its own data directory, so embedded stores (SQLite) never share a file between tests.
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-data-'));
  const running = await startServer({
    config: options.config ?? DEFAULT_CONFIG,
    env: { GATEWAY_API_KEYS: GATEWAY_KEY, GATEWAY_BOOTSTRAP_KEY: BOOTSTRAP_KEY, GATEWAY_DATA_DIR: dataDir, GATEWAY_REQUEST_LOG: 'all', ...LOOPBACK_ENV, ...options.env },
    port: 0,
    host: '127.0.0.1',
    logger: logs.logger,
  });
  return Object.assign(running, { logs, dataDir: options.env?.GATEWAY_DATA_DIR ?? dataDir });
}

/** Waits until the log hook (run after the response ended) has written the request line. */
export async function waitForLog(logs: ReturnType<typeof memoryLogger>, predicate: (line: Record<string, any>) => boolean, timeoutMs = 2000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = logs.lines().find((l) => l.msg === 'request' && predicate(l));
    if (found) return found;
    if (Date.now() > until) throw new Error(`no matching log line; lines: ${logs.text()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The stored log entry of the request with this trace id, in full (GET /v1/logs/{id}), once the log store wrote it. */
export async function storedLogEntry(url: string, traceId: string, key = GATEWAY_KEY): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const list = (await (await fetch(`${url}/v1/logs?trace_id=${encodeURIComponent(traceId)}`, { headers: { 'x-gateway-api-key': key } })).json()) as { data?: Array<{ id: string }> };
    const entry = list.data?.[0];
    if (entry !== undefined) return (await fetch(`${url}/v1/logs/${entry.id}`, { headers: { 'x-gateway-api-key': key } })).json() as Promise<Record<string, any>>;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no log entry for trace id ${traceId}`);
}
