import { CORE_TARGET_FIELDS, TargetFields, type GatewayPlugin } from '../../core/index.js';
import { config, createConfigParser } from '../../plugins/config/index.js';
import { breaker } from '../../plugins/breaker/index.js';
import { cache } from '../../plugins/cache/index.js';
import { guardrails } from '../../plugins/guardrails/index.js';
import { prompts } from '../../plugins/prompts/index.js';
import { providerRegistry } from '../../plugins/provider-registry/index.js';
import { azureAI } from '../../plugins/providers/azure/ai/index.js';
import { azureOpenAI } from '../../plugins/providers/azure/openai/index.js';
import { bedrock } from '../../plugins/providers/bedrock/index.js';
import { openai } from '../../plugins/providers/openai/index.js';
import { vertexAI } from '../../plugins/providers/vertex-ai/index.js';
import { retry } from '../../plugins/retry/index.js';
import { timeout } from '../../plugins/timeout/index.js';

/** Every bundled plugin that declares target fields, in the default config's order. */
export function fieldPlugins(): GatewayPlugin[] {
  return [config(), prompts(), providerRegistry(), guardrails(), cache(), retry(), breaker(), timeout(), openai(), vertexAI(), bedrock(), azureOpenAI(), azureAI()];
}

/** The target fields of a gateway with every bundled plugin, as `createGateway` collects them. */
export function bundledTargetFields(): TargetFields {
  const fields = new TargetFields();
  fields.declare('core', CORE_TARGET_FIELDS);
  for (const plugin of fieldPlugins()) if (plugin.targetFields !== undefined) fields.declare(plugin.name, plugin.targetFields);
  return fields;
}

/** The config parser of a gateway with every bundled plugin. */
export function bundledConfigParser() {
  return createConfigParser(bundledTargetFields());
}
