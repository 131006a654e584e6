#!/usr/bin/env node
import { gatewayPackageVersion } from '../sdk/package-version.js';
import { serve } from './serve.js';

const USAGE = `Usage: switchyard-gateway [command] [options]

Commands:
  serve [--config FILE]   Serve the gateway (the default command). Without --config (or GATEWAY_CONFIG),
                          the bundled default config; a config file may extend it ("extends": "default").
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
    case 'help':
      return void process.stdout.write(USAGE);
    case 'version':
      return void process.stdout.write(`${gatewayPackageVersion()}\n`);
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exit(2);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
