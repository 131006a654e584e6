import OpenAI from 'openai';
import type { GatewayPlugin, Target } from '../../../core/index.js';
import { config } from '../../../plugins/config/index.js';
import { anthropic } from '../../../plugins/providers/anthropic/index.js';
import { openai } from '../../../plugins/providers/openai/index.js';
import { proxy } from '../../../plugins/proxy/index.js';
import { responsesDoor, type ResponsesOptions } from '../../../plugins/responses/index.js';
import { fallbackStrategy } from '../../../plugins/strategies/fallback/index.js';
import { sqliteStore } from '../../../plugins/stores/sqlite/index.js';
import { startAnthropicContractMock } from '../../mocks/contract/anthropic.js';
import { startOpenAIContractMock } from '../../../server/testing/index.js';
import { serveGateway } from '../../helpers/serve.js';

/**
 * A test auth plugin: `x-gateway-api-key: ws-<name>` is a key of workspace `<name>`, anything
 * else a key without one; so tests can check what is per workspace without a control plane.
 */
export function workspaceKeys(): GatewayPlugin {
  return {
    name: 'test-workspace-keys',
    apply(api) {
      api.hooks.auth.tap('test-workspace-keys', (ctx) => {
        const key = ctx.header('x-gateway-api-key') ?? '';
        return { keyId: `key:${key}`, workspaceId: key.startsWith('ws-') ? key.slice(3) : null, scopes: ['*'] };
      });
    },
  };
}

/** A gateway with the Responses door, an in-memory SQL store, OpenAI and Anthropic on their contract mocks. */
export async function doorGateway(options: ResponsesOptions = {}, extra: GatewayPlugin[] = []) {
  const anthropicMock = await startAnthropicContractMock();
  const openaiMock = await startOpenAIContractMock();
  const gw = await serveGateway({
    plugins: [workspaceKeys(), sqliteStore({ file: ':memory:' }), config(), fallbackStrategy(), openai(), anthropic(), ...extra, responsesDoor(options), proxy()],
  });
  const targets = {
    anthropic: { provider: 'anthropic', api_key: 'sk-ant', custom_host: anthropicMock.baseURL } as Target,
    openai: { provider: 'openai', api_key: 'sk-oai', custom_host: openaiMock.baseURL } as Target,
  };
  const client = (target: Target, key = 'ws-a') =>
    new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-config': JSON.stringify(target), 'x-gateway-api-key': key } });
  /** A raw request to the gateway (`path` under /v1). */
  const call = (method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; key?: string } = {}) =>
    fetch(`${gw.url}/v1${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': init.key ?? 'ws-a', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  return {
    gw,
    anthropicMock,
    openaiMock,
    targets,
    client,
    call,
    async close() {
      await gw.close();
      await anthropicMock.close();
      await openaiMock.close();
    },
  };
}
