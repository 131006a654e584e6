import { createServer, type Server } from 'node:http';
import { createGateway } from 'switchyard-gateway';
import { config } from 'switchyard-gateway/plugins/config/index.js';
import { guardrailChecks } from 'switchyard-gateway/plugins/guardrails/checks/index.js';
import { guardrails } from 'switchyard-gateway/plugins/guardrails/index.js';
import { acmeChecks } from './acme-max-digits.js';
import { acmeProvider } from './acme-provider.js';

/** A gateway with the Acme provider and check, next to the bundled checks. */
export function startAcmeGateway(acmeBaseURL: string, port = 8787): Promise<Server> {
  const gateway = createGateway({
    plugins: [
      config(), // reads x-gateway-config, where hooks and guardrails are set
      acmeProvider({ baseURL: acmeBaseURL }),
      guardrailChecks(), // the bundled default.* checks
      acmeChecks(), // acme.maxDigits
      guardrails(), // runs the hooks and guardrails of each config
    ],
    // The Acme server runs on this machine: a private host, which the gateway refuses unless allowed (docs/security.md).
    options: { outbound: { allowHosts: [new URL(acmeBaseURL).host] } },
  });
  const server = createServer(gateway.handler);
  server.on('close', () => void gateway.close());
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
