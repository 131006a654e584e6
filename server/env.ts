import { resolve } from 'node:path';

/** The environment contract (docs/configuration.md). Read once at start. */
export interface ServerEnv {
  port: number | undefined;
  configFile: string | undefined;
  dataDir: string;
  apiKeys: string[];
  logLevel: string;
  allowPrivateHosts: boolean;
  /** REDIS_URL: the default for the `redis` store plugin. */
  redisUrl: string | undefined;
  /** DATABASE_URL: the default for the `postgres` store plugin. */
  databaseUrl: string | undefined;
  /** GATEWAY_METRICS_TOKEN: a bearer token that may read /metrics without a gateway key. */
  metricsToken: string | undefined;
  /** GATEWAY_ENCRYPTION_KEY: seals integration secrets (else a key file in the data dir). */
  encryptionKey: string | undefined;
  /** GATEWAY_BOOTSTRAP_KEY: the first admin key of an empty control plane (else one is generated and printed). */
  bootstrapKey: string | undefined;
  /** GATEWAY_REQUEST_LOG: which requests the `request-log` plugin writes a stdout line for (`all`, `failures`, `auto`). */
  requestLog: 'all' | 'failures' | 'auto' | undefined;
  /** The OTEL_* variables (undefined when none is set): the `otel` plugin's defaults, so a server started with its own env ignores the process's. */
  otel: Record<string, string> | undefined;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): ServerEnv {
  const port = env.PORT === undefined || env.PORT === '' ? undefined : Number(env.PORT);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    throw new Error(`PORT must be an integer from 0 to 65535, got "${env.PORT}"`);
  }
  return {
    port,
    configFile: env.GATEWAY_CONFIG || undefined,
    dataDir: resolve(env.GATEWAY_DATA_DIR || './data'),
    apiKeys: (env.GATEWAY_API_KEYS ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== ''),
    logLevel: env.GATEWAY_LOG_LEVEL || 'info',
    allowPrivateHosts: env.GATEWAY_ALLOW_PRIVATE_HOSTS === undefined ? true : env.GATEWAY_ALLOW_PRIVATE_HOSTS === '1',
    redisUrl: env.REDIS_URL || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    metricsToken: env.GATEWAY_METRICS_TOKEN || undefined,
    encryptionKey: env.GATEWAY_ENCRYPTION_KEY || undefined,
    bootstrapKey: env.GATEWAY_BOOTSTRAP_KEY || undefined,
    requestLog: requestLogLines(env.GATEWAY_REQUEST_LOG),
    otel: otelVariables(env),
  };
}

function requestLogLines(value: string | undefined): ServerEnv['requestLog'] {
  if (value === undefined || value === '') return undefined;
  if (value === 'all' || value === 'failures' || value === 'auto') return value;
  throw new Error(`GATEWAY_REQUEST_LOG must be all, failures or auto, got "${value}"`);
}

function otelVariables(env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith('OTEL_') && value !== undefined) (out ??= {})[key] = value;
  }
  return out;
}
