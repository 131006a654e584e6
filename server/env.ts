import { resolve } from 'node:path';
import { allowEntryProblem } from '../core/index.js';

/** The environment contract (docs/configuration.md). Read once at start. */
export interface ServerEnv {
  port: number | undefined;
  configFile: string | undefined;
  dataDir: string;
  apiKeys: string[];
  logLevel: string;
  /** GATEWAY_ALLOW_PRIVATE_HOSTS: `1` allows every address, `0` none beyond the allow-list; undefined when unset (the server config decides). */
  allowPrivateHosts: boolean | undefined;
  /** GATEWAY_ALLOW_HOSTS: hosts (`host[:port]`, `*.domain`, address ranges) the gateway may connect to whatever their address. */
  allowHosts: string[];
  /** REDIS_URL: the default for the `redis` store plugin; set, the default config keeps shared state in Redis. */
  redisUrl: string | undefined;
  /** GATEWAY_REDIS_PREFIX: the `redis` store plugin's key prefix (default `gateway:`), for deployments sharing one Redis. */
  redisPrefix: string | undefined;
  /** DATABASE_URL: the default for the `postgres` store plugin; set, the default config keeps the control plane and the log in PostgreSQL. */
  databaseUrl: string | undefined;
  /** GATEWAY_DATABASE_SCHEMA: the `postgres` store plugin's schema, for deployments sharing one database. */
  databaseSchema: string | undefined;
  /** DATABASE_READ_URL: a read replica of DATABASE_URL, where the log and analytics routes read. */
  databaseReadUrl: string | undefined;
  /** GATEWAY_DATABASE_POOLER: `transaction` when DATABASE_URL is a transaction-mode pooler (PgBouncer). */
  databasePooler: 'none' | 'transaction' | undefined;
  /** GATEWAY_METRICS_TOKEN: a bearer token that may read /metrics without a gateway key. */
  metricsToken: string | undefined;
  /** GATEWAY_ENCRYPTION_KEY: seals integration secrets (else a key file in the data dir). */
  encryptionKey: string | undefined;
  /** GATEWAY_BOOTSTRAP_KEY: the first admin key of an empty control plane (else one is generated and printed). */
  bootstrapKey: string | undefined;
  /** GATEWAY_SCIM_TOKEN: a bearer token identity providers may provision users and groups with (`scim` plugin). */
  scimToken: string | undefined;
  /** GATEWAY_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET, _REDIRECT_URI: single sign-on (`sso` plugin); undefined when no issuer is set. */
  oidc: { issuer: string; clientId?: string; clientSecret?: string; redirectUri?: string } | undefined;
  /** GATEWAY_REQUEST_LOG: which requests the `request-log` plugin writes a stdout line for (`all`, `failures`, `auto`). */
  requestLog: 'all' | 'failures' | 'auto' | undefined;
  /** GATEWAY_FILES_S3_BUCKET (with _PREFIX, _REGION, _ENDPOINT): the `batches` plugin keeps files in this S3-compatible bucket instead of the data dir. */
  filesS3: { bucket: string; prefix?: string; region?: string; endpoint?: string } | undefined;
  /** GATEWAY_PUBLIC_URL: the URL clients reach the gateway at (the MCP OAuth redirect URI, the agent cards the gateway serves). */
  publicUrl: string | undefined;
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
    allowPrivateHosts: flag('GATEWAY_ALLOW_PRIVATE_HOSTS', env.GATEWAY_ALLOW_PRIVATE_HOSTS),
    allowHosts: allowHosts(env.GATEWAY_ALLOW_HOSTS),
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.GATEWAY_REDIS_PREFIX || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: env.GATEWAY_DATABASE_SCHEMA || undefined,
    databasePooler: poolerOf(env.GATEWAY_DATABASE_POOLER),
    databaseReadUrl: env.DATABASE_READ_URL || undefined,
    metricsToken: env.GATEWAY_METRICS_TOKEN || undefined,
    encryptionKey: env.GATEWAY_ENCRYPTION_KEY || undefined,
    bootstrapKey: env.GATEWAY_BOOTSTRAP_KEY || undefined,
    scimToken: env.GATEWAY_SCIM_TOKEN || undefined,
    oidc: env.GATEWAY_OIDC_ISSUER
      ? {
          issuer: env.GATEWAY_OIDC_ISSUER,
          ...(env.GATEWAY_OIDC_CLIENT_ID ? { clientId: env.GATEWAY_OIDC_CLIENT_ID } : {}),
          ...(env.GATEWAY_OIDC_CLIENT_SECRET ? { clientSecret: env.GATEWAY_OIDC_CLIENT_SECRET } : {}),
          ...(env.GATEWAY_OIDC_REDIRECT_URI ? { redirectUri: env.GATEWAY_OIDC_REDIRECT_URI } : {}),
        }
      : undefined,
    requestLog: requestLogLines(env.GATEWAY_REQUEST_LOG),
    publicUrl: publicUrl(env.GATEWAY_PUBLIC_URL),
    otel: otelVariables(env),
    filesS3: env.GATEWAY_FILES_S3_BUCKET
      ? {
          bucket: env.GATEWAY_FILES_S3_BUCKET,
          ...(env.GATEWAY_FILES_S3_PREFIX ? { prefix: env.GATEWAY_FILES_S3_PREFIX } : {}),
          ...(env.GATEWAY_FILES_S3_REGION ? { region: env.GATEWAY_FILES_S3_REGION } : {}),
          ...(env.GATEWAY_FILES_S3_ENDPOINT ? { endpoint: env.GATEWAY_FILES_S3_ENDPOINT } : {}),
        }
      : undefined,
  };
}

function requestLogLines(value: string | undefined): ServerEnv['requestLog'] {
  if (value === undefined || value === '') return undefined;
  if (value === 'all' || value === 'failures' || value === 'auto') return value;
  throw new Error(`GATEWAY_REQUEST_LOG must be all, failures or auto, got "${value}"`);
}

/** An http(s) URL without a path beyond `/`; anything else stops the start. */
function publicUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`GATEWAY_PUBLIC_URL must be an http(s) URL such as https://gateway.example.com, got "${value}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new Error(`GATEWAY_PUBLIC_URL must be an http(s) URL without user info, query or fragment, got "${value}"`);
  }
  return value.replace(/\/+$/, '');
}

/** `1` or `0`; unset or empty is undefined. Anything else stops the start rather than guess. */
function flag(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === '1' || value === '0') return value === '1';
  throw new Error(`${name} must be 1 or 0, got "${value}"`);
}

/** A comma-separated allow-list; a bad entry stops the start, naming it. */
function allowHosts(value: string | undefined): string[] {
  const entries = (value ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  for (const entry of entries) {
    const problem = allowEntryProblem(entry);
    if (problem !== null) throw new Error(`GATEWAY_ALLOW_HOSTS: "${entry}" ${problem} (entries are host[:port], *.domain, an IP address[:port] or a range such as 10.0.0.0/8)`);
  }
  return entries;
}

function otelVariables(env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith('OTEL_') && value !== undefined) (out ??= {})[key] = value;
  }
  return out;
}

function poolerOf(value: string | undefined): 'none' | 'transaction' | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'none' || value === 'transaction') return value;
  throw new Error(`GATEWAY_DATABASE_POOLER must be transaction or none, got "${value}"`);
}
