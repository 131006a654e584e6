import pino from 'pino';
import { createGateway, createLogger } from '../../core/index.js';
import { cache } from '../../plugins/cache/index.js';
import { cacheSimple } from '../../plugins/cache/simple/index.js';
import { cacheMemory } from '../../plugins/cache/stores/memory/index.js';
import { config } from '../../plugins/config/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { requestLog } from '../../plugins/request-log/index.js';
import { trace } from '../../plugins/trace/index.js';
import { validation } from '../../plugins/validation/index.js';
import { serveChild } from './serve-child.js';

// Child process: a gateway with the response cache (simple mode, memory store), built from plugins,
// since the default server config does not load the cache yet. Every request is cached through the
// default config; `x-gateway-cache-force-refresh: true` makes it a miss that calls the mock and stores.
const origin = process.argv[2]!;
const logFile = process.argv[3]!;
const logger = createLogger({ level: 'info', destination: pino.destination({ dest: logFile, sync: false }) });
const gateway = createGateway({
  logger,
  // The mock origin is on loopback, which the outbound host policy refuses unless allowed.
  options: { outbound: { allowHosts: [new URL(origin).host] } },
  plugins: [
    trace(),
    config({ default: { provider: 'openai', api_key: 'sk-bench', custom_host: `${origin}/v1`, cache: { mode: 'simple', max_age: 3600 } } }),
    validation(),
    openai(),
    cacheMemory(),
    cache(),
    cacheSimple(),
    requestLog(),
  ],
});
await serveChild(gateway);
