import pino from 'pino';
import { createGateway, createLogger } from '../../core/index.js';
import { config } from '../../plugins/config/index.js';
import { limits } from '../../plugins/limits/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { requestLog } from '../../plugins/request-log/index.js';
import { trace } from '../../plugins/trace/index.js';
import { validation } from '../../plugins/validation/index.js';
import { serveChild } from './serve-child.js';

// Child process: the limits case of the bench. The same gateway (trace, config with a default target,
// validation, limits with the memory store, openai, request-log) with `policies` (one request policy and
// one token policy, limits high enough never to refuse) or `none` (the plugin loaded, no policy).
const origin = process.argv[2]!;
const logFile = process.argv[3]!;
const withPolicies = process.argv[4] === 'policies';
const logger = createLogger({ level: 'info', destination: pino.destination({ dest: logFile, sync: false }) });
const high = 1_000_000_000_000;
const gateway = createGateway({
  logger,
  options: { outbound: { allowHosts: [new URL(origin).host] } },
  plugins: [
    trace(),
    config({ default: { provider: 'openai', api_key: 'sk-bench', custom_host: `${origin}/v1` } }),
    validation(),
    limits(
      withPolicies
        ? {
            rateLimits: [
              { id: 'bench-requests', type: 'requests', unit: 'rpm', value: high, group_by: [{ key: 'user' }] },
              { id: 'bench-tokens', type: 'tokens', unit: 'rpm', value: high },
            ],
          }
        : {},
    ),
    openai(),
    requestLog(),
  ],
});
await serveChild(gateway);
