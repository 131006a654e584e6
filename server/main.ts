#!/usr/bin/env node
import { startServer } from './server.js';

/** `npm start`: serve until SIGTERM or SIGINT, then shut down gracefully and exit 0. */
async function main(): Promise<void> {
  const running = await startServer({ argv: process.argv.slice(2) });
  running.gateway.logger.info({ port: running.port, url: running.url }, `gateway listening on ${running.listening}`);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    running.gateway.logger.info({ signal, in_flight: running.gateway.inFlight }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`shutdown failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`gateway failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
