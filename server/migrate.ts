import { dirname, resolve } from 'node:path';
import { createGateway, createLogger, type GatewayPlugin } from '../core/index.js';
import type { SqlStore } from '../sdk/index.js';
import { loadPluginsWithOrigins } from './catalog.js';
import { configFileFrom, loadServerConfigFile } from './config.js';
import { readEnv } from './env.js';

/** One applied migration, as `schema_migrations` records it. */
export interface AppliedMigration {
  namespace: string;
  version: number;
  name: string;
  applied_at: number;
}

/** What `migrate` did: the migrations it applied now, and every one the database has. */
export interface MigrateReport {
  applied: AppliedMigration[];
  all: AppliedMigration[];
}

/**
 * Runs the migrations of every plugin the server config loads, against its stores (DATABASE_URL, or the data
 * dir's SQLite file), and stops: what `switchyard-gateway migrate` does ahead of a rollout, so the new
 * version's replicas start on a schema that is ready and the old ones keep running on it (migrations only
 * add: docs/operations.md, "Rolling upgrades"). The plugins start as for serving (each migrates in its start,
 * under one PostgreSQL advisory lock, so a replica starting meanwhile waits rather than migrating too) and are
 * closed again; nothing listens.
 */
export async function runMigrations(argv: readonly string[], envVars: NodeJS.ProcessEnv = process.env): Promise<MigrateReport> {
  const env = readEnv(envVars);
  const file = configFileFrom(argv, env.configFile);
  const { config } = await loadServerConfigFile(file, env);
  const baseDir = file === undefined ? process.cwd() : dirname(resolve(file));
  const { plugins } = await loadPluginsWithOrigins(config, env, baseDir);
  const started = Date.now();
  let all: AppliedMigration[] = [];
  // Last to start, so every other plugin has migrated: reads what the SQL store records.
  const report: GatewayPlugin = {
    name: 'migrate-report',
    apply(api) {
      api.onReady(async () => {
        const store = api.stores.get('sql') as SqlStore | undefined;
        if (store === undefined) return;
        all = (await store.client().all<AppliedMigration>('SELECT namespace, version, name, applied_at FROM schema_migrations ORDER BY namespace, version')).map((r) => ({
          namespace: r.namespace,
          version: Number(r.version),
          name: r.name,
          applied_at: Number(r.applied_at),
        }));
      });
    },
  };
  const gateway = createGateway({ plugins: [...plugins, report], logger: createLogger({ level: env.logLevel === 'info' ? 'warn' : env.logLevel }) });
  try {
    await gateway.ready;
  } finally {
    await gateway.close();
  }
  return { applied: all.filter((m) => m.applied_at >= started), all };
}

/** `switchyard-gateway migrate [--config FILE]`: prints what it applied, one line per migration. */
export async function migrateCommand(argv: readonly string[]): Promise<void> {
  const { applied, all } = await runMigrations(argv);
  const namespaces = new Set(all.map((m) => m.namespace));
  if (applied.length === 0) process.stdout.write(`Nothing to migrate: ${all.length} migrations in ${namespaces.size} namespaces are applied.\n`);
  else {
    process.stdout.write(`Applied ${applied.length} migrations:\n`);
    for (const m of applied) process.stdout.write(`  ${m.namespace} ${m.version} ${m.name}\n`);
    process.stdout.write(`${all.length} migrations in ${namespaces.size} namespaces are applied.\n`);
  }
}
