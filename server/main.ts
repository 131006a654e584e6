#!/usr/bin/env node
import { gatewayPackageVersion } from '../sdk/package-version.js';
import { PACKAGE_KINDS, scaffold, type PackageKind } from './scaffold/index.js';
import { serve } from './serve.js';

const USAGE = `Usage: switchyard-gateway [command] [options]

Commands:
  serve [--config FILE]   Serve the gateway (the default command). Without --config (or GATEWAY_CONFIG),
                          the bundled default config; a config file may extend it ("extends": "default").
  migrate [--config FILE] Apply the database migrations of every plugin the config loads, and stop (run it
                          ahead of a rolling upgrade; serving migrates too, under the same lock).
  new provider|check DIR [--name PACKAGE]
                          Write a new plugin package into DIR: the plugin, its tests on the gateway's
                          test kit (switchyard-gateway/testing) and a package.json; then npm install, npm test.
  help                    This text.
  version                 The gateway's version.

Environment: PORT, GATEWAY_API_KEYS, GATEWAY_DATA_DIR, GATEWAY_CONFIG, REDIS_URL, DATABASE_URL, …
(docs/configuration.md).
`;

/**
 * The gateway's command line: the package's `bin` and `npm start`. With no command, or with options
 * only (`--config FILE`), it serves, as `node dist/server/main.js --config FILE` always has.
 */
async function main(argv: string[]): Promise<void> {
  const command = argv[0] === undefined || argv[0].startsWith('-') ? 'serve' : argv[0];
  const rest = command === argv[0] ? argv.slice(1) : argv;
  switch (command) {
    case 'serve':
      if (rest.includes('--help') || rest.includes('-h')) return void process.stdout.write(USAGE);
      return serve(rest);
    case 'migrate':
      if (rest.includes('--help') || rest.includes('-h')) return void process.stdout.write(USAGE);
      return (await import('./migrate.js')).migrateCommand(rest);
    case 'new':
      return newPackage(rest);
    case 'help':
      return void process.stdout.write(USAGE);
    case 'version':
      return void process.stdout.write(`${gatewayPackageVersion()}\n`);
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exit(2);
  }
}

/** `new provider|check DIR [--name PACKAGE]`. */
function newPackage(args: string[]): void {
  const [kind, dir] = args;
  const at = args.indexOf('--name');
  const name = at === -1 ? undefined : args[at + 1];
  if (!PACKAGE_KINDS.includes(kind as PackageKind) || dir === undefined || dir.startsWith('--') || (at !== -1 && name === undefined)) {
    process.stderr.write(`Usage: switchyard-gateway new provider|check DIR [--name PACKAGE]\n`);
    process.exit(2);
  }
  let files: string[];
  try {
    files = scaffold(kind as PackageKind, dir, name);
  } catch (err) {
    process.stderr.write(`switchyard-gateway new: ${(err as Error).message}\n`);
    process.exit(1);
  }
  process.stdout.write(`Wrote a ${kind} package in ${dir}:\n${files.map((f) => `  ${f}`).join('\n')}\n\nNext: cd ${dir} && npm install && npm test\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
