import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway, type CreateGatewayOptions, type Gateway } from '../../core/index.js';
import { memoryLogger } from './gateway.js';
import { LOOPBACK_HOSTS } from './outbound.js';

/** Serves a gateway built from plugins (no server config) on an ephemeral port; loopback upstreams allowed unless `options.outbound` says otherwise. */
export async function serveGateway(init: Omit<CreateGatewayOptions, 'logger'>) {
  const logs = memoryLogger();
  const options = { outbound: { allowHosts: LOOPBACK_HOSTS }, ...init.options };
  const gateway: Gateway = createGateway({ ...init, options, logger: logs.logger });
  const server = createServer(gateway.handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    gateway,
    url,
    logs,
    async close() {
      server.closeAllConnections();
      server.close();
      await gateway.close(500);
    },
  };
}
