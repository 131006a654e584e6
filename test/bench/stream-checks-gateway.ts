import pino from 'pino';
import { createGateway, createLogger } from '../../core/index.js';
import { config } from '../../plugins/config/index.js';
import { guardrailChecks } from '../../plugins/guardrails/checks/index.js';
import { guardrails } from '../../plugins/guardrails/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { requestLog } from '../../plugins/request-log/index.js';
import { trace } from '../../plugins/trace/index.js';
import { validation } from '../../plugins/validation/index.js';
import { serveChild } from './serve-child.js';

// Child process: the checked-streams case of the bench. The same gateway (trace, config with a default target,
// validation, guardrail checks, guardrails, openai, request-log) with `checked` (one output guardrail of three window
// checks, block mode, on every request) or `unchecked` (the plugins loaded, no guardrail). Upstream hosts: the bench's
// mock and the cut-latency mock (argv[5]); the guardrail comes as JSON (argv[6]).
const origin = process.argv[2]!;
const logFile = process.argv[3]!;
const checked = process.argv[4] === 'checked';
const cutOrigin = process.argv[5]!;
const guardrail = JSON.parse(process.argv[6]!) as Record<string, unknown>;
const logger = createLogger({ level: 'info', destination: pino.destination({ dest: logFile, sync: false }) });
const gateway = createGateway({
  logger,
  options: { outbound: { allowHosts: [new URL(origin).host, new URL(cutOrigin).host] } },
  plugins: [
    trace(),
    config({ default: { provider: 'openai', api_key: 'sk-bench', custom_host: `${origin}/v1`, ...(checked ? { output_guardrails: [guardrail] } : {}) } }),
    validation(),
    guardrailChecks(),
    guardrails(),
    openai(),
    requestLog(),
  ],
});
await serveChild(gateway);
