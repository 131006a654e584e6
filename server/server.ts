import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { authenticatorsOf, createGateway, createLogger, DEFAULT_OPTIONS, type Gateway, type Logger } from '../core/index.js';
import { hasBody, watchBodyIdle } from './body-idle.js';
import { loadPluginsWithOrigins, type PluginOrigin } from './catalog.js';
import { answerClientErrors, answerHostProblem, hostProblem } from './client-errors.js';
import { configFileFrom, loadServerConfigFile } from './config.js';
import { Connections, IDLE_CLOSE_GRACE_MS } from './connections.js';
import { readEnv, type ServerEnv } from './env.js';
import { checkAuthSetup, describeListening, localUrl } from './exposure.js';
import { lingerIfBodyPending } from './linger.js';
import { SERVER_TIMEOUTS, type ServerConfig } from './schema.js';
import { pageUrls } from './start-report.js';

export interface StartOptions {
  argv?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** A config object instead of a file (tests, embedding). */
  config?: ServerConfig;
  /** Where plugins named by path or package are resolved from. Default: the config file's folder, else the working directory. */
  baseDir?: string;
  /** Overrides PORT and the config's port (0: any free port). */
  port?: number;
  host?: string;
  logger?: Logger;
}

/** What the server started with, for the start line (server/start-report.ts). */
export interface StartInfo {
  /** The config file read (absolute), or null: the bundled default config, or a config object passed in. */
  configFile: string | null;
  /** The config file's `"extends"` as written (`"default"`, a path), or null when it extends nothing. */
  extends: string | null;
  /** The data dir (GATEWAY_DATA_DIR, default `./data`), absolute. */
  dataDir: string;
  /** The dashboard's page when the `dashboard` plugin is loaded (`<url>/dashboard`), else null. */
  dashboardUrl: string | null;
  /** The API reference viewer when the `openapi` plugin is loaded and serves it (`<url>/docs`), else null. */
  docsUrl: string | null;
  /** Every plugin, in the config's order, with where it came from. */
  plugins: PluginOrigin[];
}

export interface RunningServer {
  server: Server;
  gateway: Gateway;
  port: number;
  /** A URL this machine reaches the server at: loopback (127.0.0.1 or ::1) when it listens on every interface. */
  url: string;
  /** The address really bound, for the start line: `http://0.0.0.0:8787 (all interfaces; …)`, `http://127.0.0.1:8787`. */
  listening: string;
  /** What it started with: the config file, the data dir, the dashboard and docs URLs, the plugins and their origins. */
  startInfo: StartInfo;
  /**
   * Stops accepting connections; answers a request that still arrives on an
   * open one with 503 and `connection: close`; lets every request received
   * before finish, streams included (up to `shutdownTimeoutMs`); closes
   * plugins, flushes logs, then closes the connections. With `drain` (a
   * signal from an orchestrator), first `readinessDrainMs` out of rotation:
   * `GET /ready` answers 503 while every request is still served.
   */
  close(options?: { drain?: boolean }): Promise<void>;
}

/** Starts the bundled node:http server: reads the config, loads the plugins it names, serves. */
export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const env = readEnv(options.env ?? process.env);
  const file = options.config === undefined ? configFileFrom(options.argv ?? [], env.configFile) : undefined;
  // What the file extends is kept for the start line; a config object passed in says so itself, if at all.
  const loaded = options.config === undefined ? await loadServerConfigFile(file, env) : { config: options.config, extends: extendsOf(options.config) };
  const config = loaded.config;
  // Plugins named by path or package resolve from the config file's folder (the working directory without one).
  const baseDir = options.baseDir ?? (file === undefined ? process.cwd() : dirname(resolve(file)));
  const logger = options.logger ?? createLogger({ level: env.logLevel });
  ensureKeys(config, env, logger);

  const { plugins, origins } = await loadPluginsWithOrigins(config, env, baseDir);
  const gateway = createGateway({
    plugins,
    logger,
    options: {
      maxBodyBytes: config.maxBodyBytes,
      maxJsonDepth: config.maxJsonDepth,
      upstreamHeadersTimeoutMs: config.upstream?.headersTimeoutMs,
      upstreamBodyTimeoutMs: config.upstream?.bodyTimeoutMs,
      upstreamConnections: config.upstream?.connections,
      outbound: {
        // The environment wins over the file for the blunt switch, and adds to its list.
        allowPrivateHosts: env.allowPrivateHosts ?? config.outbound?.allowPrivateHosts ?? false,
        allowHosts: [...(config.outbound?.allowHosts ?? []), ...env.allowHosts],
      },
    },
  });
  await gateway.ready;
  const host = options.host ?? config.host ?? '0.0.0.0';
  let warning: string | null;
  try {
    warning = checkAuthSetup({ authenticators: authenticatorsOf(gateway.hooks), authNone: config.auth === 'none', host });
  } catch (err) {
    await gateway.close(0);
    throw err;
  }

  const timeouts = { ...SERVER_TIMEOUTS, ...config.server };
  const maxBodyBytes = config.maxBodyBytes ?? DEFAULT_OPTIONS.maxBodyBytes;
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    connections.track(req, res);
    if (hasBody(req)) {
      lingerIfBodyPending(req, res);
      watchBodyIdle(req, res, timeouts.bodyIdleTimeoutMs);
    }
    // Node's own check answers a bare 400 (requireHostHeader, turned off below); this one answers in the envelope.
    const problem = hostProblem(req);
    if (problem !== null) return answerHostProblem(res, problem);
    gateway.handler(req, res);
  };
  const server = createServer(
    {
      // Both cover receiving the request only: once it is in, a stream may run as long as the upstream keeps sending.
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node checks the two timeouts on this period (30 s by default), so they fire within a quarter of the shorter one.
      connectionsCheckingInterval: Math.min(30_000, Math.max(25, Math.floor(timeouts.headersTimeoutMs / 4))),
      requireHostHeader: false,
    },
    handle,
  );
  const connections = new Connections(server);
  answerClientErrors(server, (socket) => connections.answering(socket));
  // `expect: 100-continue`: a body over the limit is not asked for; the gateway answers 413 (or 401) without it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!(Number(req.headers['content-length']) > maxBodyBytes)) res.writeContinue();
    handle(req, res);
  });
  // Any other expectation is ignored (RFC 9110 allows it) rather than answered with Node's bare 417.
  server.on('checkExpectation', handle);
  // WebSocket handshakes (the Responses door's WebSocket mode): the gateway's stages, then the route's handler takes the socket.
  server.on('upgrade', gateway.upgrade);

  const port = options.port ?? env.port ?? config.port ?? 8787;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await gateway.close(0);
    throw err;
  }
  const address = server.address() as AddressInfo;
  if (warning !== null) logger.warn({ address: address.address, port: address.port }, warning);
  const shutdownTimeoutMs = config.shutdownTimeoutMs ?? 10_000;
  const readinessDrainMs = config.readinessDrainMs ?? 0;

  let closing: Promise<void> | null = null;
  const close = (options: { drain?: boolean } = {}) =>
    (closing ??= (async () => {
      if (options.drain === true && readinessDrainMs > 0) {
        // Out of rotation first: GET /ready answers 503 while everything is still served, then the listener closes.
        gateway.markUnready();
        await new Promise((r) => setTimeout(r, readinessDrainMs));
      }
      const deadline = performance.now() + shutdownTimeoutMs;
      const stopped = connections.stopAccepting();
      // Refuses what arrives from now on (503), waits for what it accepted, closes plugins and flushes logs.
      await gateway.close(shutdownTimeoutMs);
      // A request sent right after the last answers still gets its 503, even when the drain used the whole grace.
      await connections.closeAll(Math.max(deadline, performance.now() + IDLE_CLOSE_GRACE_MS));
      await stopped;
    })());

  const url = localUrl(address);
  const startInfo: StartInfo = {
    configFile: file === undefined ? null : resolve(file),
    extends: loaded.extends,
    dataDir: env.dataDir,
    ...pageUrls(url, config.plugins, origins),
    plugins: origins,
  };
  return { server, gateway, port: address.port, url, listening: describeListening(address), startInfo, close };
}

/**
 * With auth on and no key configured, nothing could call the gateway. Rather
 * than fail, generate a key for this run and say so once, on stderr.
 */
function ensureKeys(config: ServerConfig, env: ServerEnv, logger: Logger): void {
  const auth = config.plugins.find((p) => p.name === 'auth-static');
  // With a control plane, its first admin key (GATEWAY_BOOTSTRAP_KEY, or generated and printed once) opens the gateway.
  if (config.plugins.some((p) => p.name === 'control-plane')) return;
  if (auth === undefined || (auth.options?.keys as unknown[] | undefined)?.length || env.apiKeys.length > 0) return;
  const key = `gw-${randomBytes(24).toString('base64url')}`;
  env.apiKeys.push(key);
  process.stderr.write(
    `\nNo gateway API key is configured (GATEWAY_API_KEYS is empty).\n` +
      `Generated one for this run only:\n\n  x-gateway-api-key: ${key}\n\n` +
      `Set GATEWAY_API_KEYS=key1,key2 to choose your own.\n\n`,
  );
  logger.warn('no GATEWAY_API_KEYS set; a key was generated for this run and printed to stderr');
}

/** The `extends` a config object passed in carries (an embedder's note; the object is used as it is). */
function extendsOf(config: ServerConfig): string | null {
  const value = (config as { extends?: unknown }).extends;
  return typeof value === 'string' ? value : null;
}
