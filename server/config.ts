import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseOptions } from '../core/index.js';
import { baseFileOf, capitalise, extendConfig, refuseChanges } from './config-extends.js';
import { defaultConfig } from './default-config.js';
import type { ServerEnv } from './env.js';
import { ExtendingConfigSchema, ServerConfigSchema, type ServerConfig } from './schema.js';

type StoreEnv = Pick<ServerEnv, 'redisUrl' | 'databaseUrl'>;

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

/** A server config as loaded, and what its file extends (`"default"`, a path; null for none), for the start line. */
export interface LoadedServerConfig {
  config: ServerConfig;
  extends: string | null;
}

/**
 * Reads and validates a server config file, with its `extends` applied (server/config-extends.ts); with no
 * file, the bundled default for the environment (REDIS_URL, DATABASE_URL), which is also what
 * `"extends": "default"` starts from.
 */
export async function loadServerConfig(file: string | undefined, env: StoreEnv = { redisUrl: undefined, databaseUrl: undefined }): Promise<ServerConfig> {
  return (await loadServerConfigFile(file, env)).config;
}

/** {@link loadServerConfig}, with what the file extends beside the config. */
export async function loadServerConfigFile(file: string | undefined, env: StoreEnv = { redisUrl: undefined, databaseUrl: undefined }): Promise<LoadedServerConfig> {
  if (file === undefined) return { config: defaultConfig(env), extends: null };
  return loadFile(file, env, []);
}

/**
 * One file of an `extends` chain as a whole config. A file that extends nothing is checked as
 * today's configs are; one that extends a base is checked on its own first (so an error names a
 * path in that file), its base loaded, and the merge checked again as a whole config (a limit
 * whose other half is in the base).
 */
async function loadFile(file: string, env: StoreEnv, chain: readonly string[]): Promise<LoadedServerConfig> {
  const extendedBy = chain.at(-1);
  const where = `the server config ${file}${extendedBy === undefined ? '' : ` (extended by ${extendedBy})`}`;
  const json = await readJson(file, where);
  if (typeof json !== 'object' || json === null || Array.isArray(json) || (json as { extends?: unknown }).extends === undefined) {
    refuseChanges(json, where);
    return { config: parseOptions(where, ServerConfigSchema, json), extends: null };
  }
  const own = parseOptions(where, ExtendingConfigSchema, json);
  const dir = dirname(resolve(file));
  const extended = (config: ServerConfig) => ({ config: parseOptions(where, ServerConfigSchema, config), extends: own.extends });
  if (own.extends === 'default') return extended(extendConfig(defaultConfig(env), null, own, where, dir));
  const baseFile = baseFileOf(file, own.extends, chain);
  const base = await loadFile(baseFile, env, [...chain, resolve(file)]);
  return extended(extendConfig(base.config, dirname(baseFile), own, where, dir));
}

/** A config file's JSON, or an error saying which file and why not. */
async function readJson(file: string, where: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`Cannot read ${where}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(`${capitalise(where)} is not valid JSON: ${(err as Error).message}`);
  }
}
