import { startServer } from './server.js';
import { reportStart } from './start-report.js';

/** `serve` (and `npm start`): serve until SIGTERM or SIGINT, then shut down gracefully and exit 0. */
export async function serve(argv: readonly string[]): Promise<void> {
  const running = await startServer({ argv });
  // The address, config, data dir, pages and plugins: lines on a terminal, one JSON log line otherwise.
  await reportStart(running);
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    running.gateway.logger.info({ signal, in_flight: running.gateway.inFlight }, 'shutting down');
    // A signal from an orchestrator: out of rotation for `readinessDrainMs` first, then the graceful shutdown.
    running.close({ drain: true }).then(
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
