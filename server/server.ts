import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { dirname, resolve } from 'node:path';
import { createGateway, createLogger, type Gateway, type Logger } from '../core/index.js';
import { loadPlugins } from './catalog.js';
import { configFileFrom, loadServerConfig } from './config.js';
import { readEnv, type ServerEnv } from './env.js';
import { answerClientErrors } from './client-errors.js';
import { SERVER_TIMEOUTS, type ServerConfig } from './schema.js';

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

export interface RunningServer {
  server: Server;
  gateway: Gateway;
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests and streams finish (up to the shutdown timeout), closes plugins, flushes logs. */
  close(): Promise<void>;
}

/** Starts the bundled node:http server: reads the config, loads the plugins it names, serves. */
export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const env = readEnv(options.env ?? process.env);
  const file = options.config === undefined ? configFileFrom(options.argv ?? [], env.configFile) : undefined;
  const config = options.config ?? (await loadServerConfig(file, env));
  // Plugins named by path or package resolve from the config file's folder (the working directory without one).
  const baseDir = options.baseDir ?? (file === undefined ? process.cwd() : dirname(resolve(file)));
  const logger = options.logger ?? createLogger({ level: env.logLevel });
  ensureKeys(config, env, logger);

  const plugins = await loadPlugins(config, env, baseDir);
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

  let draining = false;
  const timeouts = { ...SERVER_TIMEOUTS, ...config.server };
  // The response in progress on each socket, so a client error that comes mid-answer never writes a second status line.
  const responses = new WeakMap<Duplex, ServerResponse>();
  const server = createServer(
    {
      // Both cover receiving the request only: once it is in, a stream may run as long as the upstream keeps sending.
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      keepAliveTimeout: timeouts.keepAliveTimeoutMs,
      // Node checks the two timeouts on this period (30 s by default), so they fire within a quarter of the shorter one.
      connectionsCheckingInterval: Math.min(30_000, Math.max(25, Math.floor(timeouts.headersTimeoutMs / 4))),
    },
    (req, res) => {
      responses.set(req.socket, res);
      // Once shutdown began, every answer closes its connection, so keep-alive clients stop sending here and in-flight work can drain.
      if (draining) res.setHeader('connection', 'close');
      gateway.handler(req, res);
    },
  );
  answerClientErrors(server, responses);
  // Open connections, so a shutdown can end each keep-alive one once its answer is out (per connection, not per request).
  const sockets = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const port = options.port ?? env.port ?? config.port ?? 8787;
  const host = options.host ?? config.host ?? '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  const shutdownTimeoutMs = config.shutdownTimeoutMs ?? 10_000;

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // An answer already under way closes its connection too: before its headers (Connection: close), or right after
      // it, so the client opens its next request elsewhere instead of sending it here while the gateway closes.
      for (const socket of sockets) {
        const res = responses.get(socket);
        if (res === undefined || res.writableFinished) continue;
        if (!res.headersSent) res.shouldKeepAlive = false;
        else res.once('finish', () => socket.end());
      }
      await gateway.close(shutdownTimeoutMs);
      server.closeAllConnections();
      await stopped;
    })());

  return { server, gateway, port: actual, url: `http://127.0.0.1:${actual}`, close };
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
