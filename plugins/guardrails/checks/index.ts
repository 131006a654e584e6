import type { GatewayPlugin, GuardrailCheck } from '../../../sdk/index.js';
import { allowedRequestTypes } from './allowed-request-types.js';
import { characterCount } from './character-count.js';
import { containsCode } from './contains-code.js';
import { contains } from './contains.js';
import { endsWith } from './ends-with.js';
import { jsonKeys } from './json-keys.js';
import { jsonSchema } from './json-schema.js';
import { createLogCheck, log } from './log.js';
import { modelWhitelist } from './model-whitelist.js';
import { pii } from './pii.js';
import { promptInjection } from './prompt-injection.js';
import { regexMatch } from './regex-match.js';
import { sentenceCount } from './sentence-count.js';
import { validUrls } from './valid-urls.js';
import { webhook } from './webhook.js';
import { wordCount } from './word-count.js';

export const PLUGIN_NAME = 'guardrail-checks';

/** The bundled checks, by id. Bundled ids use the `default.` namespace so configs written for other gateways keep working. */
export const BUNDLED_CHECKS: Readonly<Record<string, GuardrailCheck<any>>> = Object.freeze({
  'default.regexMatch': regexMatch,
  'default.contains': contains,
  'default.wordCount': wordCount,
  'default.sentenceCount': sentenceCount,
  'default.characterCount': characterCount,
  'default.jsonSchema': jsonSchema,
  'default.jsonKeys': jsonKeys,
  'default.validUrls': validUrls,
  'default.containsCode': containsCode,
  'default.endsWith': endsWith,
  'default.modelWhitelist': modelWhitelist,
  'default.allowedRequestTypes': allowedRequestTypes,
  'default.pii': pii,
  'default.promptInjection': promptInjection,
  'default.webhook': webhook,
  'default.log': log,
});

/** Registers every bundled check in `api.checks`; `default.log` reports delivery failures through the gateway's logger. */
export function guardrailChecks(): GatewayPlugin {
  return {
    name: PLUGIN_NAME,
    state: [
      { name: 'compiled-schemas', scope: 'organisation', keyedBy: 'JSON schemas and patterns compiled by their text: the same text compiles the same for anyone, and holds no answer.' },
    ],
    apply(api) {
      for (const [id, check] of Object.entries(BUNDLED_CHECKS)) {
        api.checks.add(id, id === 'default.log' ? createLogCheck((fields, message) => api.logger.warn(fields, message)) : check);
      }
    },
  };
}

export default guardrailChecks;
