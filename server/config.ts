import { parseOptions } from '../core/index.js';
import { applyExtends, readConfigJson } from './config-extends.js';
import { defaultConfig } from './default-config.js';
import type { ServerEnv } from './env.js';
import { ServerConfigSchema, type ServerConfig } from './schema.js';

/** The config file named by `--config FILE`, else `GATEWAY_CONFIG`, else none. */
export function configFileFrom(argv: readonly string[], envFile: string | undefined): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--config') {
      const file = argv[i + 1];
      if (file === undefined || file.startsWith('--')) throw new Error('--config needs a file path');
      return file;
    }
    if (arg.startsWith('--config=')) return arg.slice('--config='.length);
  }
  return envFile;
}

/**
 * Reads and validates a server config file, with its `extends` applied (server/config-extends.ts); with no
 * file, the bundled default for the environment (REDIS_URL, DATABASE_URL).
 */
export async function loadServerConfig(file: string | undefined, env: Pick<ServerEnv, 'redisUrl' | 'databaseUrl'> = { redisUrl: undefined, databaseUrl: undefined }): Promise<ServerConfig> {
  if (file === undefined) return defaultConfig(env);
  const json = applyExtends(readConfigJson(file), file, env);
  return parseOptions(`the server config ${file}`, ServerConfigSchema, json);
}
