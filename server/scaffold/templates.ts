/**
 * The files `switchyard-gateway new` writes. Plain JavaScript with `// @ts-check` and JSDoc types, so a
 * new package needs no build step and an editor still type-checks it against the SDK's declarations.
 * `{{…}}` placeholders are filled by {@link fill}.
 */

/** Values a template may use. */
export interface TemplateValues {
  /** The package name (`my-provider`). */
  packageName: string;
  /** The plugin's id: the provider name or the check's namespace (`my_provider`, `mine`). */
  id: string;
  /** The gateway's version, for the peer dependency range. */
  gatewayVersion: string;
  /** The versions of the test dependencies the gateway's own kit runs with. */
  vitest: string;
  openai: string;
  anthropic: string;
}

/** Replaces every `{{key}}` with its value. */
export function fill(template: string, values: TemplateValues): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => (key in values ? String(values[key as keyof TemplateValues]) : whole));
}

const PACKAGE_JSON = `{
  "name": "{{packageName}}",
  "version": "0.1.0",
  "description": "A switchyard-gateway plugin.",
  "type": "module",
  "exports": {
    ".": "./index.js"
  },
  "files": [
    "index.js"
  ],
  "scripts": {
    "test": "vitest run"
  },
  "peerDependencies": {
    "switchyard-gateway": ">={{gatewayVersion}}"
  },
  "devDependencies": {
    "@anthropic-ai/sdk": "{{anthropic}}",
    "openai": "{{openai}}",
    "switchyard-gateway": "^{{gatewayVersion}}",
    "vitest": "{{vitest}}"
  }
}
`;

const PROVIDER_INDEX = `// @ts-check
/**
 * The \`{{id}}\` provider: an upstream that speaks OpenAI's chat completions format. Load it from a
 * server config that extends the default:
 *
 *   { "extends": "default", "plugins": [{ "name": "{{packageName}}", "options": { "baseURL": "https://llm.example.com/v1" } }] }
 *
 * and send \`{ "provider": "{{id}}", "api_key": "…" }\` as a request's target. For an upstream with a
 * wire format of its own, map the request in the route's \`body\` and the answer in its \`response\`
 * (docs/plugins.md, "A provider with its own wire format").
 */
import { addShapedRoutes, openAIFormatResponse, parseOptions, v } from 'switchyard-gateway/sdk';

/** The plugin API this package was written for; the gateway refuses to start with another major version. */
const GATEWAY_API = '^2.0.0';

const Options = v.strictObject({
  /** Where the upstream's API lives; a target's \`custom_host\` replaces it. */
  baseURL: v.optional(v.pipe(v.string('baseURL must be a string'), v.url('baseURL must be a URL')), 'https://llm.example.com/v1'),
});

/**
 * @param {v.InferInput<typeof Options>} [options]
 * @returns {import('switchyard-gateway/sdk').GatewayPlugin}
 */
export default function provider(options = {}) {
  const opts = parseOptions('{{id}}', Options, options);
  /** @type {import('switchyard-gateway/sdk').Provider} */
  const definition = {
    name: '{{id}}',
    baseURL: opts.baseURL,
    authHeaders: (target) => ({ authorization: \`Bearer \${target.api_key ?? ''}\` }),
    routes: { 'chat.completions': { path: '/chat/completions', response: openAIFormatResponse } },
  };
  return {
    name: '{{id}}',
    gatewayApi: GATEWAY_API,
    state: [], // keeps nothing between requests (docs/security.md, "Declaring state")
    apply(api) {
      addShapedRoutes(api, ['chat.completions']);
      api.providers.add('{{id}}', definition);
    },
  };
}
`;

const PROVIDER_TEST = `// @ts-check
/**
 * The provider contract every bundled provider passes, from the gateway's test kit: chat, streams, tools,
 * images, errors, usage, retries and the Responses and Messages front doors, against a mock upstream of
 * OpenAI's format. Change the mock (or write one for your wire format) as the provider grows.
 */
import { expect } from 'vitest';
import { providerContract, startOpenAIContractMock } from 'switchyard-gateway/testing';
import provider from '../index.js';

const KEY = 'sk-contract-test';

providerContract({
  provider: '{{id}}',
  plugins: () => [provider()],
  startMock: () => startOpenAIContractMock('/v1'),
  target: (mock) => ({ provider: '{{id}}', api_key: KEY, custom_host: mock.baseURL }),
  model: 'a-model',
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.path).toBe('/v1/chat/completions');
      expect(seen.headers.authorization).toBe(\`Bearer \${KEY}\`);
      expect(seen.body).toEqual({ model: 'a-model', messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }] });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '18C' });
    },
    image(seen, kind) {
      const url = kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=';
      expect(seen.body.messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url } });
    },
    tools(seen) {
      expect(seen.body.tools[0].function.name).toBe('get_weather');
    },
  },
});
`;

const CHECK_INDEX = `// @ts-check
/**
 * The \`{{id}}.maxLength\` guardrail check: passes when the checked text is at most \`max\` characters
 * long. Load the plugin from a server config that extends the default:
 *
 *   { "extends": "default", "plugins": [{ "name": "{{packageName}}" }] }
 *
 * and use the check in a config like any bundled one:
 *
 *   { "input_guardrails": [{ "id": "short", "deny": true, "{{id}}.maxLength": { "max": 2000 } }] }
 */
import { defineCheck, v } from 'switchyard-gateway/sdk';

/** The plugin API this package was written for; the gateway refuses to start with another major version. */
const GATEWAY_API = '^2.0.0';

export const maxLength = defineCheck({
  parameters: v.strictObject(
    { max: v.pipe(v.number('max must be a number'), v.integer('max must be a whole number'), v.minValue(0, 'max must be 0 or more')) },
    'the parameters must be { max }, with max a whole number',
  ),
  // A denial answers 446 with this code instead of guardrail_denied (declared in the plugin's errorCodes).
  denyCode: '{{id}}_too_long',
  run({ max }, { text }) {
    const length = [...text].length;
    return { verdict: length <= max, explanation: \`The text is \${length} characters long; at most \${max} are allowed.\`, data: { length } };
  },
});

/** @returns {import('switchyard-gateway/sdk').GatewayPlugin} */
export default function checks() {
  return {
    name: '{{id}}-checks',
    gatewayApi: GATEWAY_API,
    errorCodes: { {{id}}_too_long: { status: 446, type: 'guardrail_error' } },
    state: [], // keeps nothing between requests (docs/security.md, "Declaring state")
    apply(api) {
      api.checks.add('{{id}}.maxLength', maxLength);
    },
  };
}
`;

const CHECK_TEST = `// @ts-check
/**
 * The check contract every bundled check passes, from the gateway's test kit: registration, parameters,
 * verdicts in both phases, odd texts, and a denial end to end through a gateway. Add cases as the check grows.
 */
import { checkContract } from 'switchyard-gateway/testing';
import checks from '../index.js';

checkContract({
  check: '{{id}}.maxLength',
  plugins: () => [checks()],
  cases: [
    { parameters: { max: 5 }, pass: ['short', ''], fail: ['longer than five'] },
    { parameters: { max: 0 }, pass: [''], fail: ['x'] },
  ],
  refused: [{ max: -1 }, { max: 'ten' }, {}],
});
`;

const README = `# {{packageName}}

A [switchyard-gateway](https://www.npmjs.com/package/switchyard-gateway) plugin.

- \`npm install\`, then \`npm test\`: the gateway's test kit (\`switchyard-gateway/testing\`) runs the
  contract the bundled plugins pass.
- Use it: in your gateway's folder, \`npm install <path to this folder or its packed tarball>\`, and name
  it in a server config that extends the default (see the comment at the top of index.js).
`;

/** The files of a new package of this kind, by path. */
export function templateFiles(kind: 'provider' | 'check'): Record<string, string> {
  return kind === 'provider'
    ? { 'package.json': PACKAGE_JSON, 'index.js': PROVIDER_INDEX, 'test/provider.test.js': PROVIDER_TEST, 'README.md': README }
    : { 'package.json': PACKAGE_JSON, 'index.js': CHECK_INDEX, 'test/check.test.js': CHECK_TEST, 'README.md': README };
}
