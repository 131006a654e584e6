import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createGateway, createLogger, type CreateGatewayOptions, type Gateway, type GatewayPlugin, type Logger } from '../../core/index.js';
import { config } from '../../plugins/config/index.js';
import { guardrailChecks } from '../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../plugins/guardrails/index.js';
import { messagesDoor } from '../../plugins/messages/index.js';
import { requestLog } from '../../plugins/request-log/index.js';
import { responsesDoor } from '../../plugins/responses/index.js';
import { retry } from '../../plugins/retry/index.js';
import { sqliteStore } from '../../plugins/stores/sqlite/index.js';
import { trace } from '../../plugins/trace/index.js';
import { validation } from '../../plugins/validation/index.js';

/** Mock upstreams listen on loopback, which the gateway's outbound policy refuses unless allowed: the kit allows loopback and nothing else. */
export const LOOPBACK_HOSTS: readonly string[] = Object.freeze(['127.0.0.1', '::1', 'localhost']);

/** A logger that keeps its JSON lines in memory, for assertions on what was logged. */
export interface MemoryLogger {
  logger: Logger;
  /** Every line logged so far, parsed. */
  lines(): Record<string, any>[];
  /** Everything logged so far, as written. */
  text(): string;
}

/** A logger that keeps its JSON lines in memory (see {@link MemoryLogger}). */
export function memoryLogger(level = 'info'): MemoryLogger {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      out.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ level, destination });
  return {
    logger,
    text: () => out.join(''),
    lines: () =>
      out
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, any>),
  };
}

/** A gateway served on an ephemeral loopback port. */
export interface TestGateway {
  gateway: Gateway;
  /** Base URL, without `/v1`: `http://127.0.0.1:<port>`. */
  url: string;
  logs: MemoryLogger;
  /** Closes the connections, the server and the gateway. */
  close(): Promise<void>;
}

/** Options of {@link startTestGateway}. */
export interface TestGatewayOptions extends Omit<CreateGatewayOptions, 'logger' | 'plugins'> {
  /** The plugins under test: a provider, a checks plugin, or anything else. */
  plugins: GatewayPlugin[];
  /**
   * The bundled plugins around them. `basic` (the default): trace ids, an in-memory SQLite store, configs
   * (`x-gateway-config`), request validation, the guardrail checks and guardrails, retries, the Responses and
   * Messages front doors, and a request log line. `none`: only `plugins`.
   */
  around?: 'basic' | 'none';
  /**
   * Whether to wait until the gateway is ready before serving (default true: a plugin that fails at boot
   * rejects here). false serves at once, as the bundled server does: requests wait for `ready`, and answer
   * 503 when it failed, for testing a plugin's failure at boot.
   */
  waitForReady?: boolean;
}

/** The bundled plugins a plugin under test runs among (see {@link TestGatewayOptions.around}). */
export function basicPlugins(): GatewayPlugin[] {
  return [trace(), sqliteStore({ file: ':memory:' }), config(), validation(), guardrailChecks(), guardrails(), retry(), requestLog(), responsesDoor(), messagesDoor()];
}

/**
 * Starts a gateway with the plugins under test (among the bundled ones a request needs, see
 * {@link TestGatewayOptions.around}) on an ephemeral port of 127.0.0.1, logging to memory, with loopback
 * upstreams allowed (mock upstreams), and no authentication: requests name their target with
 * `x-gateway-config`. The `around` plugins come first, the plugins under test after them, as in a server
 * config that extends the default; one with the name of an `around` plugin replaces it.
 */
export async function startTestGateway(options: TestGatewayOptions): Promise<TestGateway> {
  const { plugins, around = 'basic', waitForReady = true, ...rest } = options;
  const logs = memoryLogger();
  const gateway = createGateway({
    ...rest,
    // A plugin under test with a bundled plugin's name (a bundled plugin tested on the kit) takes its place.
    plugins: [...(around === 'basic' ? basicPlugins().filter((b) => !plugins.some((p) => p.name === b.name)) : []), ...plugins],
    options: { outbound: { allowHosts: [...LOOPBACK_HOSTS] }, ...rest.options },
    logger: logs.logger,
  });
  if (waitForReady) await gateway.ready;
  const server = createServer(gateway.handler);
  server.on('upgrade', gateway.upgrade);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    gateway,
    url,
    logs,
    async close() {
      server.closeAllConnections();
      server.close();
      await gateway.close(500);
    },
  };
}
