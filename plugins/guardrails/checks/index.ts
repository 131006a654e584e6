import type { GatewayPlugin } from '../../../core/index.js';
import type { GuardrailCheck } from '../check.js';
import { contains } from './contains.js';
import { regexMatch } from './regex-match.js';

export const PLUGIN_NAME = 'guardrail-checks';

/** The bundled checks, by id. Bundled ids use the `default.` namespace so configs written for other gateways keep working. */
export const BUNDLED_CHECKS: Readonly<Record<string, GuardrailCheck<any>>> = Object.freeze({
  'default.regexMatch': regexMatch,
  'default.contains': contains,
});

/** Registers every bundled check in `api.checks`. */
export function guardrailChecks(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    apply(api) {
      for (const [id, check] of Object.entries(BUNDLED_CHECKS)) api.checks.add(id, check);
    },
  };
}

export default guardrailChecks;
