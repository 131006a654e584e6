import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Gateway } from '../../core/index.js';

/**
 * A bench child's gateway on an ephemeral loopback port: its URL sent to the orchestrator once
 * listening, gone when the orchestrator goes (its IPC channel closes), closed on SIGTERM.
 */
export async function serveChild(gateway: Gateway): Promise<void> {
  await gateway.ready;
  const server = createServer({ keepAliveTimeout: 65_000 }, gateway.handler);
  server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void gateway.close(1000).then(() => process.exit(0));
  });
}
