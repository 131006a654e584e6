import { createGateway, createLogger, type GatewayPlugin } from '../../core/index.js';
import { config } from '../../plugins/config/index.js';
import { logStore } from '../../plugins/logs/index.js';
import { metrics } from '../../plugins/metrics/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { sqliteStore } from '../../plugins/stores/sqlite/index.js';
import { trace } from '../../plugins/trace/index.js';
import { validation } from '../../plugins/validation/index.js';
import { serveChild } from './serve-child.js';

// Child process for the logging bench: the same gateway with logging off, with the SQLite log store,
// or with the log store and the Prometheus metrics. argv: <origin> <off|sqlite|sqlite+metrics> <db file>.
// BENCH_LOG_OPTIONS / BENCH_METRICS_OPTIONS (JSON) override the plugins' options, to compare settings.
const [origin, variant, file] = process.argv.slice(2) as [string, string, string];
const plugins: GatewayPlugin[] = [trace(), config({ default: { provider: 'openai', api_key: 'sk-bench', custom_host: `${origin}/v1` } }), validation(), openai()];
if (variant !== 'off') plugins.push(sqliteStore({ file }), logStore({ retentionDays: 0, ...(process.env.BENCH_LOG_OPTIONS ? JSON.parse(process.env.BENCH_LOG_OPTIONS) : {}) }));
if (variant === 'sqlite+metrics') plugins.push(metrics(process.env.BENCH_METRICS_OPTIONS ? JSON.parse(process.env.BENCH_METRICS_OPTIONS) : {}));
// The mock origin is on loopback, which the outbound host policy refuses unless allowed.
const gateway = createGateway({ logger: createLogger({ level: 'warn' }), plugins, options: { outbound: { allowHosts: [new URL(origin).host] } } });
await serveChild(gateway);
