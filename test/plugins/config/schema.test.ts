import * as v from 'valibot';
import { describe, expect, test } from 'vitest';
import { GatewayError } from '../../../core/index.js';
import { configError, toConfigIssues } from '../../../plugins/config/errors.js';
import { createConfigSchema, type GatewayConfig } from '../../../plugins/config/schema.js';
import { bundledTargetFields } from '../../helpers/fields.js';

/** The schema of a gateway with every bundled plugin (each declares the fields it reads). */
const fields = bundledTargetFields();
const ConfigSchema = createConfigSchema(fields);
const CONFIG_ALIASES: Record<string, string> = Object.fromEntries(fields.aliases());

/** Validates like the config plugin does (before building the target tree), throwing its 400. */
function parseConfig(input: unknown): GatewayConfig {
  const result = v.safeParse(ConfigSchema, input);
  if (!result.success) throw configError(toConfigIssues(result.issues));
  return result.output;
}

/** A complete single-provider config to hang the field under test on. */
const KEY = { provider: 'openai', api_key: 'sk-test' } as const;
const fallback = (...targets: unknown[]) => ({ strategy: { mode: 'fallback' }, targets });
const conditional = (conditions: unknown[], dflt: string, targets: unknown[]) => ({
  strategy: { mode: 'conditional', conditions, default: dflt },
  targets,
});
const check = { id: 'default.contains', parameters: { words: ['x'] } };
const feedback = { value: 1, weight: 0.5, metadata: { k: 'v' } };

type Invalid = [name: string, config: unknown, path: string, rule?: string];

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Parses `config` and returns the thrown error, failing the test if nothing (or something else) was thrown. */
function rejectionOf(config: unknown): GatewayError {
  try {
    parseConfig(config);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error(`expected ${JSON.stringify(config)} to be rejected`);
}

/** The message must carry `path` as one whole issue entry (`path: rule`), not just as a substring of a longer path. */
function expectInvalid(config: unknown, path: string, rule?: string): GatewayError {
  const err = rejectionOf(config);
  expect(err.status).toBe(400);
  expect(err.code).toBe('invalid_request');
  expect(err.param).toBe('x-gateway-config');
  expect(err.message).toMatch(/^Invalid config: /);
  if (path !== '') expect(err.message).toMatch(new RegExp(`(^Invalid config: |; )${escape(path)}: `));
  if (rule !== undefined) expect(err.message).toContain(rule);
  return err;
}

function runTable(valid: [name: string, config: unknown][], invalid: Invalid[]): void {
  if (valid.length > 0) {
    test.each(valid)('valid: %s', (_name, config) => {
      expect(() => parseConfig(config)).not.toThrow();
    });
  }
  if (invalid.length > 0) {
    test.each(invalid)('invalid: %s', (_name, config, path, rule) => {
      expectInvalid(config, path, rule);
    });
  }
}

describe('error shape', () => {
  test('GatewayError invalid_request, 400, param x-gateway-config, path and rule in the message', () => {
    const err = expectInvalid(fallback(KEY, { ...KEY, cb_config: { failure_threshold: 1, cooldown_interval: 1000 } }), 'targets[1].cb_config.cooldown_interval');
    expect(err.message).toBe('Invalid config: targets[1].cb_config.cooldown_interval: must be at least 30000 (got 1000)');
    expect(err.toEnvelope().error).toMatchObject({ param: 'x-gateway-config', code: 'invalid_request', type: 'invalid_request_error' });
  });

  test('reports at most 3 issues, in spec field order, joined with "; "', () => {
    const err = rejectionOf({ ...KEY, name: 1, prompt_id: 2, custom_host: 3, virtual_key: 4, resource_name: 5 });
    expect(err.message).toBe(
      'Invalid config: name: must be a string (got number); virtual_key: must be a string (got number); prompt_id: must be a string (got number)',
    );
  });

  test.each([[[]], ['{"provider":"openai"}'], [null], [42], [undefined]])('non-object config %j is rejected', (input) => {
    expectInvalid(input, '', 'must be a JSON object');
  });

  test('a wrongly typed value is described by its type, not echoed', () => {
    const err = expectInvalid({ ...KEY, aws_secret_access_key: 987654321 }, 'aws_secret_access_key', 'must be a string (got number)');
    expect(err.message).not.toContain('987654321');
  });

  test('ConfigSchema works with valibot directly', () => {
    expect(v.safeParse(ConfigSchema, KEY).success).toBe(true);
    expect(v.safeParse(ConfigSchema, { name: 'x' }).success).toBe(false);
  });
});

describe('unknown properties are rejected at every strict level', () => {
  runTable(
    [['all spec-listed top-level fields', {
      ...KEY, name: 'n', strict_reference_compliance: false, virtual_key: 'vk', prompt_id: 'p', request_timeout: 1,
      custom_host: 'http://h', forward_headers: ['x-a'], override_params: { model: 'm' }, weight: 0, on_status_codes: [429],
      cache: { mode: 'simple' }, retry: { attempts: 1 }, cb_config: { failure_threshold: 1, cooldown_interval: 30000 },
      resource_name: 'r', deployment_id: 'd', api_version: 'v', deployments: [{ deployment_id: 'd', alias: 'a', api_version: 'v' }],
      aws_access_key_id: 'a', aws_secret_access_key: 'b', aws_region: 'c', aws_session_token: 'd',
      vertex_project_id: 'p', vertex_region: 'r', vertex_service_account_json: { type: 'sa' },
      azure_region: 'r', azure_deployment_name: 'd', azure_deployment_type: 'managed', azure_endpoint_name: 'e', azure_api_version: 'v', azure_entra_scope: 's',
      openai_organization: 'o', openai_project: 'p',
      before_request_hooks: [], after_request_hooks: [], input_guardrails: [], output_guardrails: [],
    }]],
    [
      ['top level', { ...KEY, foo: 1 }, 'foo', 'is not an allowed property'],
      ['strategy', { ...fallback(KEY), strategy: { mode: 'fallback', foo: 1 } }, 'strategy.foo'],
      ['target', fallback({ ...KEY, foo: 1 }), 'targets[0].foo'],
      ['nested target', fallback(fallback(KEY, { ...KEY, bar: 1 })), 'targets[0].targets[1].bar'],
      ['cache', { cache: { mode: 'simple', foo: 1 } }, 'cache.foo'],
      ['retry', { retry: { attempts: 1, foo: 1 } }, 'retry.foo'],
      ['cb_config', { ...KEY, cb_config: { failure_threshold: 1, cooldown_interval: 30000, foo: 1 } }, 'cb_config.foo'],
      ['deployments item', { ...KEY, deployments: [{ deployment_id: 'd', alias: 'a', api_version: 'v', foo: 1 }] }, 'deployments[0].foo'],
      ['hook item', { before_request_hooks: [{ id: 'h', foo: 1 }] }, 'before_request_hooks[0].foo'],
      ['checks item', { before_request_hooks: [{ id: 'h', checks: [{ ...check, foo: 1 }] }] }, 'before_request_hooks[0].checks[0].foo'],
      ['feedback', { after_request_hooks: [{ id: 'h', on_fail: { feedback: { ...feedback, foo: 1 } } }] }, 'after_request_hooks[0].on_fail.feedback.foo'],
      ['condition item', conditional([{ query: {}, then: 'a', foo: 1 }], 'a', [{ ...KEY, name: 'a' }]), 'strategy.conditions[0].foo'],
      ['guardrail on_fail', { input_guardrails: [{ id: 'g', on_fail: { feedback, foo: 1 } }] }, 'input_guardrails[0].on_fail.foo'],
      ['__proto__ from JSON stays a (rejected) property', JSON.parse('{"__proto__": {}, "cache": {"mode": "simple"}}'), '__proto__'],
      ['__proto__ next to an alias', JSON.parse('{"__proto__": {}, "cloudA_region": "r", "cache": {"mode": "simple"}}'), '__proto__'],
      ['aliases are config-level keys only', { ...KEY, cache: { mode: 'simple', cloudA_region: 'x' } }, 'cache.cloudA_region'],
    ],
  );
});

describe('field types, enums and minimums', () => {
  runTable(
    [
      ['request_timeout 1', { request_timeout: 1 }],
      ['weight 0 and fractional', { ...KEY, weight: 0.25 }],
      ['on_status_codes integers', { ...KEY, on_status_codes: [429, 500] }],
      ['forward_headers strings', { forward_headers: ['x-a', 'x-b'] }],
      ['override_params object', { ...KEY, override_params: { temperature: 0.2, stop: ['x'] } }],
      ['azure_deployment_type serverless', { ...KEY, azure_deployment_type: 'serverless' }],
      ['vertex_service_account_json object', { provider: 'vertex-ai', vertex_region: 'r', vertex_service_account_json: { a: 1 } }],
    ],
    [
      ['name string', { ...KEY, name: 1 }, 'name', 'must be a string (got number)'],
      ['strict_reference_compliance boolean', { ...KEY, strict_reference_compliance: 'no' }, 'strict_reference_compliance', 'must be true or false'],
      ['provider string', { provider: 1, api_key: 'k' }, 'provider'],
      ['api_key string', { provider: 'openai', api_key: null }, 'api_key', 'must be a string (got null)'],
      ['passthrough boolean', { passthrough: 'true' }, 'passthrough'],
      ['request_timeout >= 1', { request_timeout: 0 }, 'request_timeout', 'must be at least 1 (got 0)'],
      ['request_timeout integer', { request_timeout: 1.5 }, 'request_timeout', 'must be an integer (got 1.5)'],
      ['request_timeout number', { request_timeout: '100' }, 'request_timeout', 'must be a number (got string)'],
      ['weight >= 0', { ...KEY, weight: -1 }, 'weight', 'must be at least 0 (got -1)'],
      ['on_status_codes integers', { ...KEY, on_status_codes: [429, 4.5] }, 'on_status_codes[1]', 'must be an integer'],
      ['on_status_codes array', { ...KEY, on_status_codes: 429 }, 'on_status_codes', 'must be an array'],
      ['forward_headers strings', { forward_headers: ['x-a', 2] }, 'forward_headers[1]'],
      ['forward_headers: content-length', { forward_headers: ['x-a', 'content-length'] }, 'forward_headers[1]', 'is a connection or framing header'],
      ['forward_headers: Transfer-Encoding', { forward_headers: ['Transfer-Encoding'] }, 'forward_headers[0]', 'never forwards'],
      ['forward_headers: host', { forward_headers: ['host'] }, 'forward_headers[0]'],
      ['forward_headers: connection', { forward_headers: ['connection'] }, 'forward_headers[0]'],
      ['forward_headers: upgrade', { forward_headers: ['upgrade'] }, 'forward_headers[0]'],
      ['forward_headers: keep-alive', { forward_headers: ['keep-alive'] }, 'forward_headers[0]'],
      ['forward_headers: proxy-*', { forward_headers: ['proxy-authorization'] }, 'forward_headers[0]'],
      ['forward_headers: te', { forward_headers: ['te'] }, 'forward_headers[0]'],
      ['forward_headers: trailer', { forward_headers: ['trailer'] }, 'forward_headers[0]'],
      ['forward_headers: expect', { forward_headers: ['expect'] }, 'forward_headers[0]'],
      ['forward_headers in a target', fallback({ ...KEY, forward_headers: ['content-length'] }), 'targets[0].forward_headers[0]'],
      ['override_params object, not array', { ...KEY, override_params: [] }, 'override_params', 'must be a JSON object'],
      ['azure_deployment_type enum', { ...KEY, azure_deployment_type: 'dedicated' }, 'azure_deployment_type', 'must be serverless or managed'],
      ['vertex_service_account_json object', { ...KEY, vertex_service_account_json: '{}' }, 'vertex_service_account_json', 'must be a JSON object'],
      ['aws_region string', { ...KEY, aws_region: 1 }, 'aws_region'],
      ['targets array', { strategy: { mode: 'fallback' }, targets: {} }, 'targets', 'must be an array'],
      ['targets item object', fallback('openai'), 'targets[0]', 'must be a JSON object'],
    ],
  );
});

// Defect 2 of issue 15: custom_host was a bare string, so a URL that does not parse reached the transport.
describe('custom_host is an absolute http(s) URL without user info, at any depth', () => {
  const nested = (host: string) => fallback(KEY, { strategy: { mode: 'single' }, targets: [{ ...KEY, custom_host: host }] });
  runTable(
    [
      ['http with a port and path', { ...KEY, custom_host: 'http://127.0.0.1:9000/v1' }],
      ['https', { ...KEY, custom_host: 'https://llm.example.com/v1/' }],
      ['IPv6 literal', { ...KEY, custom_host: 'http://[::1]:8000/v1' }],
      ['nested', nested('https://llm.example.com/v1')],
    ],
    [
      ['unterminated IPv6 literal', { ...KEY, custom_host: 'http://[::1' }, 'custom_host', 'must be an absolute http or https URL'],
      ['no host', { ...KEY, custom_host: 'http://' }, 'custom_host', 'must be an absolute http or https URL'],
      ['relative', { ...KEY, custom_host: '/v1' }, 'custom_host', 'must be an absolute http or https URL'],
      ['another scheme', { ...KEY, custom_host: 'file:///etc/passwd' }, 'custom_host', 'must be an http or https URL'],
      ['user info', { ...KEY, custom_host: 'https://user:pw@llm.example.com/v1' }, 'custom_host', 'must not contain user info'],
      ['not a string', { ...KEY, custom_host: 1 }, 'custom_host', 'must be a string (got number)'],
      ['nested, no host', nested('http://'), 'targets[1].targets[0].custom_host', 'must be an absolute http or https URL'],
      ['nested, user info', nested('http://u:p@h.example'), 'targets[1].targets[0].custom_host', 'must not contain user info'],
    ],
  );

  test('the password of a refused custom host is not repeated', () => {
    expect(expectInvalid({ ...KEY, custom_host: 'https://user:SECRET-pw@llm.example.com/v1' }, 'custom_host').message).not.toContain('SECRET');
  });
});

describe('strategy', () => {
  runTable(
    [
      ['single', { strategy: { mode: 'single' }, targets: [KEY] }],
      ['loadbalance with weights', { strategy: { mode: 'loadbalance' }, targets: [{ ...KEY, weight: 0.7 }, { ...KEY, weight: 0.3 }] }],
      ['fallback with on_status_codes', { strategy: { mode: 'fallback', on_status_codes: [429, 503] }, targets: [KEY, KEY] }],
      ['conditional', conditional([{ query: { 'metadata.tier': { $eq: 'pro' } }, then: 'a' }, { query: {}, then: 'b' }], 'b', [{ ...KEY, name: 'a' }, { ...KEY, name: 'b' }])],
    ],
    [
      ['mode enum', { strategy: { mode: 'random' }, targets: [KEY] }, 'strategy.mode', 'must be one of single, loadbalance, fallback, conditional (got "random")'],
      ['mode required', { strategy: {}, targets: [KEY] }, 'strategy.mode', 'is required'],
      ['strategy object', { strategy: 'fallback', targets: [KEY] }, 'strategy', 'must be a JSON object'],
      ['on_status_codes integers', { strategy: { mode: 'fallback', on_status_codes: ['429'] }, targets: [KEY] }, 'strategy.on_status_codes[0]'],
      ['conditional needs conditions', { strategy: { mode: 'conditional', default: 'a' }, targets: [{ ...KEY, name: 'a' }] }, 'strategy.conditions', 'is required when mode is conditional'],
      ['conditional needs default', { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'a' }] }, targets: [{ ...KEY, name: 'a' }] }, 'strategy.default', 'is required when mode is conditional'],
      ['conditions non-empty', conditional([], 'a', [{ ...KEY, name: 'a' }]), 'strategy.conditions', 'must have at least 1 item'],
      ['condition query required', conditional([{ then: 'a' }], 'a', [{ ...KEY, name: 'a' }]), 'strategy.conditions[0].query', 'is required'],
      ['condition query object', conditional([{ query: 'x', then: 'a' }], 'a', [{ ...KEY, name: 'a' }]), 'strategy.conditions[0].query', 'must be a JSON object'],
      ['condition then string', conditional([{ query: {}, then: 1 }], 'a', [{ ...KEY, name: 'a' }]), 'strategy.conditions[0].then', 'must be a string'],
      ['default string', conditional([{ query: {}, then: 'a' }], 1 as never, [{ ...KEY, name: 'a' }]), 'strategy.default'],
    ],
  );
});

describe('strategy and targets need each other', () => {
  runTable(
    [['both', fallback(KEY)]],
    [
      ['targets without strategy', { targets: [KEY] }, 'strategy', 'is required when targets is given'],
      ['strategy without targets', { strategy: { mode: 'single' } }, 'targets', 'is required (a non-empty array) when strategy.mode is given'],
      ['empty targets', { strategy: { mode: 'single' }, targets: [] }, 'targets', 'must have at least 1 item'],
      ['nested targets without strategy', fallback({ targets: [KEY] }), 'targets[0].strategy'],
    ],
  );
});

describe('conditional targets must exist among the direct children', () => {
  const targets = [{ ...KEY, name: 'a' }, { ...KEY, name: 'b' }];
  runTable(
    [['names exist', conditional([{ query: {}, then: 'a' }, { query: {}, then: 'b' }], 'a', targets)]],
    [
      ['unknown then', conditional([{ query: {}, then: 'a' }, { query: {}, then: 'zz' }], 'a', targets), 'strategy.conditions[1].then', 'must name a target in targets (got "zz"; names in targets: a, b)'],
      ['unknown default', conditional([{ query: {}, then: 'a' }], 'nope', targets), 'strategy.default', '(got "nope"'],
      ['no target has a name', conditional([{ query: {}, then: 'a' }], 'a', [KEY]), 'strategy.conditions[0].then', 'no item of targets has a name'],
      ['grandchild name does not count', conditional([{ query: {}, then: 'deep' }], 'a', [{ ...fallback({ ...KEY, name: 'deep' }), name: 'a' }]), 'strategy.conditions[0].then'],
      ['nested conditional', fallback(conditional([{ query: {}, then: 'x' }], 'a', targets)), 'targets[0].strategy.conditions[0].then'],
    ],
  );
});

describe('passthrough', () => {
  runTable(
    [
      ['passthrough alone', { passthrough: true }],
      ['passthrough with cache and retry', { passthrough: true, cache: { mode: 'simple' }, retry: { attempts: 2 } }],
      ['passthrough false with targets', { passthrough: false, ...fallback(KEY) }],
      ['passthrough target', fallback({ passthrough: true }, KEY)],
    ],
    [
      ['with targets', { passthrough: true, targets: [KEY] }, 'targets', 'cannot be used with passthrough: true'],
      ['with strategy', { passthrough: true, strategy: { mode: 'single' } }, 'strategy', 'cannot be used with passthrough: true'],
      ['with override_params', { passthrough: true, override_params: { model: 'm' } }, 'override_params', 'cannot be used with passthrough: true'],
      ['with before_request_hooks', { passthrough: true, before_request_hooks: [{ id: 'h' }] }, 'before_request_hooks', 'cannot be used with passthrough: true'],
      ['with after_request_hooks', { passthrough: true, after_request_hooks: [{ id: 'h' }] }, 'after_request_hooks', 'cannot be used with passthrough: true'],
      ['with input_guardrails', { passthrough: true, input_guardrails: ['g'] }, 'input_guardrails', 'cannot be used with passthrough: true'],
      ['with output_guardrails', { passthrough: true, output_guardrails: ['g'] }, 'output_guardrails', 'cannot be used with passthrough: true'],
      ['inside a target', fallback({ passthrough: true, override_params: {} }), 'targets[0].override_params', 'cannot be used with passthrough: true'],
    ],
  );
});

describe('at least one property combination', () => {
  runTable(
    [
      ['provider + api_key', KEY],
      ['provider + custom_host', { provider: 'ollama', custom_host: 'http://localhost:11434' }],
      ['virtual_key', { virtual_key: 'vk-1' }],
      ['strategy + targets', fallback(KEY)],
      ['cache', { cache: { mode: 'semantic' } }],
      ['retry', { retry: { attempts: 0 } }],
      ['prompt_id', { prompt_id: 'pp-1' }],
      ['forward_headers', { forward_headers: ['x-key'] }],
      ['request_timeout', { request_timeout: 10000 }],
      ['provider + cloud A keys', { provider: 'bedrock', aws_access_key_id: 'a', aws_secret_access_key: 'b' }],
      ['provider + cloud B region + service account', { provider: 'vertex-ai', vertex_region: 'r', vertex_service_account_json: {} }],
      ['provider + cloud B region + project', { provider: 'vertex-ai', vertex_region: 'r', vertex_project_id: 'p' }],
      ['provider + cloud C deployment', { provider: 'azure', azure_deployment_name: 'd', azure_deployment_type: 'managed', azure_region: 'r', azure_api_version: 'v' }],
      ['provider + cloud C endpoint', { provider: 'azure', azure_endpoint_name: 'e', azure_deployment_type: 'serverless' }],
      ['after_request_hooks', { after_request_hooks: [] }],
      ['before_request_hooks', { before_request_hooks: [{ id: 'h' }] }],
      ['input_guardrails', { input_guardrails: ['g'] }],
      ['output_guardrails', { output_guardrails: ['g'] }],
      ['passthrough', { passthrough: true }],
      ['provider slug alone', { provider: '@openai-prod' }],
      ['target with provider alone inherits credentials', { ...KEY, ...fallback({ provider: 'openai' }, { provider: 'anthropic', override_params: { model: 'c' } }) }],
      ['target with provider slug alone', fallback({ provider: '@anthropic-prod' })],
    ],
    [
      ['name alone', { name: 'x' }, '', 'must set at least one of: provider + api_key'],
      ['provider name alone at top level', { provider: 'openai' }, '', 'or a provider slug (provider starting with @)'],
      ['empty object', {}, '', 'must set at least one of'],
      ['provider + only one cloud A key', { provider: 'bedrock', aws_access_key_id: 'a' }, '', 'must set at least one of'],
      ['provider + cloud B region only', { provider: 'vertex-ai', vertex_region: 'r' }, '', 'must set at least one of'],
      ['provider + incomplete cloud C deployment', { provider: 'azure', azure_deployment_name: 'd', azure_deployment_type: 'managed', azure_region: 'r' }, '', 'must set at least one of'],
      ['override_params alone', { override_params: { model: 'm' } }, '', 'must set at least one of'],
      ['target with name only', fallback({ name: 'x' }), 'targets[0]', 'must set provider (credentials may come from the parent config) or at least one of'],
      ['nested target with weight only', fallback(fallback(KEY, { weight: 1 })), 'targets[0].targets[1]', 'must set provider'],
    ],
  );
});

describe('cache', () => {
  runTable(
    [
      ['simple', { cache: { mode: 'simple' } }],
      ['semantic with max_age', { cache: { mode: 'semantic', max_age: 0 } }],
    ],
    [
      ['mode required', { cache: { max_age: 60 } }, 'cache.mode', 'is required'],
      ['mode enum', { cache: { mode: 'exact' } }, 'cache.mode', 'must be simple or semantic (got "exact")'],
      ['max_age >= 0', { cache: { mode: 'simple', max_age: -1 } }, 'cache.max_age', 'must be at least 0 (got -1)'],
      ['max_age integer', { cache: { mode: 'simple', max_age: 1.5 } }, 'cache.max_age', 'must be an integer'],
      ['cache object', { cache: 'simple' }, 'cache', 'must be a JSON object'],
    ],
  );
});

describe('retry', () => {
  runTable(
    [
      ['0 attempts', { retry: { attempts: 0 } }],
      ['every field', { retry: { attempts: 5, on_status_codes: [429, 503], use_retry_after_headers: true } }],
      ['no cap on the count (the retry plugin bounds the time instead)', { retry: { attempts: 1000 } }],
    ],
    [
      ['attempts required', { retry: { on_status_codes: [429] } }, 'retry.attempts', 'is required'],
      ['attempts >= 0', { retry: { attempts: -1 } }, 'retry.attempts', 'must be at least 0 (got -1)'],
      ['attempts integer', { retry: { attempts: 2.5 } }, 'retry.attempts', 'must be an integer (got 2.5)'],
      ['on_status_codes integers', { retry: { attempts: 1, on_status_codes: [429, 'x'] } }, 'retry.on_status_codes[1]'],
      ['use_retry_after_headers boolean', { retry: { attempts: 1, use_retry_after_headers: 'yes' } }, 'retry.use_retry_after_headers', 'must be true or false'],
    ],
  );
});

describe('cb_config', () => {
  const cb = (over: Record<string, unknown>) => ({ ...KEY, cb_config: { failure_threshold: 1, cooldown_interval: 30000, ...over } });
  runTable(
    [
      ['the minimums', cb({})],
      ['with failure_status_codes', cb({ failure_threshold: 5, cooldown_interval: 60000.5, failure_status_codes: [100, 500, 599] })],
      ['a fractional failure_threshold (a number in the spec)', cb({ failure_threshold: 2.5 })],
    ],
    [
      ['failure_threshold >= 1', cb({ failure_threshold: 0 }), 'cb_config.failure_threshold', 'must be at least 1 (got 0)'],
      ['failure_threshold >= 1, fractions too', cb({ failure_threshold: 0.5 }), 'cb_config.failure_threshold', 'must be at least 1 (got 0.5)'],
      ['failure_threshold number', cb({ failure_threshold: '3' }), 'cb_config.failure_threshold', 'must be a number'],
      ['failure_threshold required', { ...KEY, cb_config: { cooldown_interval: 30000 } }, 'cb_config.failure_threshold', 'is required'],
      ['cooldown_interval >= 30000', cb({ cooldown_interval: 29999 }), 'cb_config.cooldown_interval', 'must be at least 30000 (got 29999)'],
      ['cooldown_interval required', { ...KEY, cb_config: { failure_threshold: 1 } }, 'cb_config.cooldown_interval', 'is required'],
      ['failure_status_codes >= 100', cb({ failure_status_codes: [99] }), 'cb_config.failure_status_codes[0]', 'must be at least 100 (got 99)'],
      ['failure_status_codes <= 599', cb({ failure_status_codes: [500, 600] }), 'cb_config.failure_status_codes[1]', 'must be at most 599 (got 600)'],
      ['failure_status_codes integers', cb({ failure_status_codes: [500.5] }), 'cb_config.failure_status_codes[0]', 'must be an integer'],
      ['in a target', fallback(cb({ cooldown_interval: 1000 }), KEY), 'targets[0].cb_config.cooldown_interval'],
    ],
  );
});

describe('deployments', () => {
  const dep = { deployment_id: 'd1', alias: 'gpt', api_version: '2024-06-01' };
  runTable(
    [
      ['required fields', { ...KEY, deployments: [dep] }],
      ['with is_default', { ...KEY, deployments: [dep, { ...dep, deployment_id: 'd2', is_default: true }] }],
    ],
    [
      ['deployment_id required', { ...KEY, deployments: [{ alias: 'a', api_version: 'v' }] }, 'deployments[0].deployment_id', 'is required'],
      ['alias required', { ...KEY, deployments: [dep, { deployment_id: 'd', api_version: 'v' }] }, 'deployments[1].alias', 'is required'],
      ['api_version required', { ...KEY, deployments: [{ deployment_id: 'd', alias: 'a' }] }, 'deployments[0].api_version', 'is required'],
      ['is_default boolean', { ...KEY, deployments: [{ ...dep, is_default: 1 }] }, 'deployments[0].is_default', 'must be true or false'],
      ['deployments array', { ...KEY, deployments: dep }, 'deployments', 'must be an array'],
    ],
  );
});

describe('hooks', () => {
  runTable(
    [
      ['before hook, full', { before_request_hooks: [{ id: 'h', type: 'guardrail', checks: [check], on_fail: { feedback, deny: true }, on_success: { feedback: {}, deny: false } }] }],
      ['before hook, id only', { before_request_hooks: [{ id: 'h' }] }],
      ['after hook, full', { after_request_hooks: [{ id: 'h', type: 'guardrail', async: true, checks: [check], on_fail: { feedback }, on_success: { feedback } }] }],
    ],
    [
      ['id required', { before_request_hooks: [{ type: 'guardrail' }] }, 'before_request_hooks[0].id', 'is required'],
      ['after hook id required', { after_request_hooks: [{ async: true }] }, 'after_request_hooks[0].id', 'is required'],
      ['check parameters required', { before_request_hooks: [{ id: 'h', checks: [{ id: 'c' }] }] }, 'before_request_hooks[0].checks[0].parameters', 'is required'],
      ['check id required', { after_request_hooks: [{ id: 'h', checks: [check, { parameters: {} }] }] }, 'after_request_hooks[0].checks[1].id', 'is required'],
      ['check parameters object', { before_request_hooks: [{ id: 'h', checks: [{ id: 'c', parameters: [] }] }] }, 'before_request_hooks[0].checks[0].parameters', 'must be a JSON object'],
      ['feedback value number', { before_request_hooks: [{ id: 'h', on_fail: { feedback: { value: 'bad' } } }] }, 'before_request_hooks[0].on_fail.feedback.value', 'must be a number'],
      ['feedback metadata object', { after_request_hooks: [{ id: 'h', on_success: { feedback: { metadata: 'm' } } }] }, 'after_request_hooks[0].on_success.feedback.metadata'],
      ['deny boolean', { before_request_hooks: [{ id: 'h', on_fail: { deny: 'yes' } }] }, 'before_request_hooks[0].on_fail.deny', 'must be true or false'],
      ['after hooks list no deny', { after_request_hooks: [{ id: 'h', on_fail: { deny: true } }] }, 'after_request_hooks[0].on_fail.deny', 'is not an allowed property'],
      ['before hooks list no async', { before_request_hooks: [{ id: 'h', async: true }] }, 'before_request_hooks[0].async', 'is not an allowed property'],
      ['after hook async boolean', { after_request_hooks: [{ id: 'h', async: 'no' }] }, 'after_request_hooks[0].async'],
      ['hook item object', { before_request_hooks: ['h'] }, 'before_request_hooks[0]', 'must be a JSON object'],
    ],
  );
});

describe('guardrail entries', () => {
  runTable(
    [
      ['string id', { input_guardrails: ['pg-guard-1'] }],
      ['object with check ids', { input_guardrails: [{ id: 'g', deny: true, async: false, on_fail: { feedback }, on_success: { feedback }, 'default.contains': { words: ['x'] }, 'default.regex': {} }] }],
      ['check ids only', { output_guardrails: [{ 'default.jwt': { jwksUri: 'https://x' } }] }],
      ['output on_fail with deny', { output_guardrails: ['g', { id: 'g2', on_fail: { feedback, deny: true }, on_success: { deny: false } }] }],
    ],
    [
      ['check-id value must be an object', { input_guardrails: [{ id: 'g', 'default.contains': 3 }] }, 'input_guardrails[0].default.contains', 'must be an object of check parameters'],
      ['check-id value not an array', { output_guardrails: ['g', { 'default.contains': [] }] }, 'output_guardrails[1].default.contains'],
      ['entry string or object', { input_guardrails: [5] }, 'input_guardrails[0]', 'must be a guardrail id (string) or a guardrail object'],
      ['entry not an array', { output_guardrails: [[]] }, 'output_guardrails[0]', 'must be a guardrail id (string) or a guardrail object'],
      ['id string', { input_guardrails: [{ id: 1 }] }, 'input_guardrails[0].id', 'must be a string'],
      ['deny boolean', { input_guardrails: [{ deny: 'true' }] }, 'input_guardrails[0].deny'],
      ['async boolean', { output_guardrails: [{ async: 1 }] }, 'output_guardrails[0].async'],
      ['input on_fail has no deny', { input_guardrails: [{ on_fail: { deny: true } }] }, 'input_guardrails[0].on_fail.deny', 'is not an allowed property'],
      ['feedback weight number', { output_guardrails: [{ on_success: { feedback: { weight: 'w' } } }] }, 'output_guardrails[0].on_success.feedback.weight'],
      ['list', { input_guardrails: 'g' }, 'input_guardrails', 'must be an array'],
    ],
  );
});

describe('recursive targets', () => {
  const deep = (leaf: unknown) => fallback(fallback(KEY, fallback(KEY, leaf)));
  runTable(
    [
      ['3 levels deep', deep({ ...KEY, retry: { attempts: 2 } })],
      ['targets with their own cache, retry and hooks', fallback({ ...KEY, cache: { mode: 'simple' }, retry: { attempts: 1 }, input_guardrails: ['g'] }, KEY)],
    ],
    [
      ['retry 2 levels deep', fallback(fallback(KEY, { ...KEY, retry: { attempts: 9.5 } })), 'targets[0].targets[1].retry.attempts', 'must be an integer (got 9.5)'],
      ['retry 3 levels deep', deep({ ...KEY, retry: { attempts: -1 } }), 'targets[0].targets[1].targets[1].retry.attempts', 'must be at least 0'],
      ['unknown property 3 levels deep', deep({ ...KEY, modle: 'x' }), 'targets[0].targets[1].targets[1].modle', 'is not an allowed property'],
      ['combination 3 levels deep', deep({ name: 'leaf' }), 'targets[0].targets[1].targets[1]', 'must set provider'],
    ],
  );
});

describe('stand-in aliases', () => {
  test('the table maps every stand-in to its real name', () => {
    expect(CONFIG_ALIASES).toEqual({
      cloudA_access_key_id: 'aws_access_key_id',
      cloudA_secret_access_key: 'aws_secret_access_key',
      cloudA_region: 'aws_region',
      cloudA_session_token: 'aws_session_token',
      cloudB_project_id: 'vertex_project_id',
      cloudB_region: 'vertex_region',
      cloudB_service_account_json: 'vertex_service_account_json',
      cloudC_region: 'azure_region',
      cloudC_deployment_name: 'azure_deployment_name',
      cloudC_deployment_type: 'azure_deployment_type',
      cloudC_endpoint_name: 'azure_endpoint_name',
      cloudC_api_version: 'azure_api_version',
      cloudC_entra_scope: 'azure_entra_scope',
      vendorX_organization: 'openai_organization',
      vendorX_project: 'openai_project',
    });
  });

  test('every alias is renamed; the output has real names only', () => {
    const input: Record<string, unknown> = { provider: 'x' };
    for (const alias of Object.keys(CONFIG_ALIASES)) input[alias] = alias === 'cloudB_service_account_json' ? { type: 'sa' } : alias === 'cloudC_deployment_type' ? 'managed' : `v-${alias}`;
    const out = parseConfig(input) as Record<string, unknown>;
    for (const [alias, real] of Object.entries(CONFIG_ALIASES)) {
      expect(out).not.toHaveProperty(alias);
      expect(out[real]).toEqual(input[alias]);
    }
  });

  test.each([
    ['cloudA_*', { provider: 'bedrock', cloudA_access_key_id: 'a', cloudA_secret_access_key: 'b', cloudA_region: 'us-east-1' }, { provider: 'bedrock', aws_access_key_id: 'a', aws_secret_access_key: 'b', aws_region: 'us-east-1' }],
    ['cloudB_*', { provider: 'vertex-ai', cloudB_region: 'r', cloudB_project_id: 'p' }, { provider: 'vertex-ai', vertex_region: 'r', vertex_project_id: 'p' }],
    ['cloudC_*', { provider: 'azure', cloudC_endpoint_name: 'e', cloudC_deployment_type: 'serverless' }, { provider: 'azure', azure_endpoint_name: 'e', azure_deployment_type: 'serverless' }],
    ['vendorX_*', { ...KEY, vendorX_organization: 'org', vendorX_project: 'proj' }, { ...KEY, openai_organization: 'org', openai_project: 'proj' }],
  ])('%s aliases satisfy the same rules as the real names', (_name, input, expected) => {
    expect(parseConfig(input)).toEqual(expected);
  });

  test('aliases are renamed inside targets at any depth, and the input is not mutated', () => {
    const leaf = { provider: 'bedrock', cloudA_access_key_id: 'a', cloudA_secret_access_key: 'b' };
    const input = fallback({ ...KEY, vendorX_project: 'p' }, fallback(leaf));
    const snapshot = structuredClone(input);
    const out = parseConfig(input) as GatewayConfig;
    expect(out.targets?.[0]).toEqual({ ...KEY, openai_project: 'p' });
    expect(out.targets?.[1]?.targets?.[0]).toEqual({ provider: 'bedrock', aws_access_key_id: 'a', aws_secret_access_key: 'b' });
    expect(JSON.stringify(out)).not.toMatch(/cloudA_|vendorX_/);
    expect(input).toEqual(snapshot);
  });

  runTable(
    [],
    [
      ['alias + real name at top level', { ...KEY, cloudA_region: 'x', aws_region: 'y' }, 'cloudA_region', 'is an alias of aws_region, which is also set'],
      ['alias + real name in a target', fallback(KEY, { ...KEY, vertex_region: 'a', cloudB_region: 'b' }), 'targets[1].cloudB_region', 'is an alias of vertex_region'],
      ['alias + real name 3 levels deep', fallback(fallback(fallback({ ...KEY, vendorX_project: 'a', openai_project: 'b' }))), 'targets[0].targets[0].targets[0].vendorX_project'],
      ['alias value is validated under the real name', { ...KEY, cloudC_deployment_type: 'dedicated' }, 'azure_deployment_type', 'must be serverless or managed'],
      ['aliased service account must be an object', { ...KEY, cloudB_service_account_json: 'x' }, 'vertex_service_account_json', 'must be a JSON object'],
    ],
  );
});
