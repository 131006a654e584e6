import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_KEY, startTestServer } from '../../helpers/gateway.js';
import { startAnthropicContractMock } from '../../mocks/contract/anthropic.js';
import { startOpenAIContractMock } from '../../../server/testing/index.js';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import type { ContractMock } from '../../../server/testing/index.js';

/**
 * Request-body rules of the spec the `validation` plugin enforces, through the bundled server with
 * its default config: chat `tools` and `tool_choice` allow function tools only, and a completion's
 * `best_of` must exceed `n` (default 1). The Responses and Messages doors keep their own tool kinds.
 */
let mock: MockUpstream;
let openaiMock: ContractMock;
let anthropicMock: ContractMock;
let gw: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  mock = await startMockOpenAI();
  openaiMock = await startOpenAIContractMock();
  anthropicMock = await startAnthropicContractMock();
  gw = await startTestServer();
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
  await openaiMock?.close();
  await anthropicMock?.close();
});

const post = (path: string, body: unknown, config: Record<string, unknown> = { provider: 'openai', api_key: 'sk-v', custom_host: mock.baseURL }) =>
  fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config) },
    body: JSON.stringify(body),
  });

/** A 400 in the gateway's envelope whose `param` (and message) name the field; nothing reached the upstream. */
async function expectRefused(res: Response, param: string, rule: RegExp) {
  expect(res.status).toBe(400);
  const body = await res.json();
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error', param });
  expect(body.error.message).toContain(`'${param}'`);
  expect(body.error.message).toMatch(rule);
}

const fn = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: {} } } });
const chat = (extra: Record<string, unknown>) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('chat completions: function tools only', () => {
  test.each([
    ['a hosted tool', { tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    ['a hosted tool after a function tool', { tools: [fn('a'), { type: 'file_search' }] }, 'tools[1].type'],
    ['a tool_choice of another type', { tools: [fn('a')], tool_choice: { type: 'web_search' } }, 'tool_choice.type'],
  ])('%s is a 400 naming the field', async (_name, extra, param) => {
    const before = mock.requests.length;
    await expectRefused(await post('/v1/chat/completions', chat(extra)), param, /must be function: only function tools are allowed/);
    expect(mock.requests.length).toBe(before);
  });

  test('a tool without a type is refused, and so is a tool that is no object', async () => {
    await expectRefused(await post('/v1/chat/completions', chat({ tools: [{ function: { name: 'a' } }] })), 'tools[0].type', /is required: only function tools are allowed/);
    await expectRefused(await post('/v1/chat/completions', chat({ tools: [fn('a'), 'web_search'] })), 'tools[1]', /must be a tool object/);
  });

  test('a function tool_choice must name its function', async () => {
    await expectRefused(await post('/v1/chat/completions', chat({ tools: [fn('a')], tool_choice: { type: 'function' } })), 'tool_choice.function', /must be \{"name": …\}/);
  });

  test('a tool_choice string outside none, auto, required is named', async () => {
    await expectRefused(await post('/v1/chat/completions', chat({ tool_choice: 'sometimes' })), 'tool_choice', /must be none, auto, required or \{"type": "function"/);
  });

  test('function tools and every tool_choice form pass, sent on untouched', async () => {
    for (const choice of ['none', 'auto', 'required', { type: 'function', function: { name: 'b' } }]) {
      const body = chat({ tools: [fn('a'), fn('b')], tool_choice: choice });
      const res = await post('/v1/chat/completions', body);
      expect(res.status).toBe(200);
      expect(JSON.parse(mock.requests.at(-1)!.body)).toEqual(body);
    }
  });
});

describe('the other front doors keep their own tool kinds', () => {
  test('Responses: a hosted tool reaches a native provider', async () => {
    const res = await post(
      '/v1/responses',
      { model: 'gpt-4o-mini', input: 'Hi', tools: [{ type: 'web_search' }], tool_choice: 'auto' },
      { provider: 'openai', api_key: 'sk-v', custom_host: openaiMock.baseURL },
    );
    expect(res.status).toBe(200);
    expect(openaiMock.requests.at(-1)!.body.tools).toEqual([{ type: 'web_search' }]);
  });

  test('Messages: a server tool reaches a native provider', async () => {
    const tools = [{ type: 'web_search_20250305', name: 'web_search' }];
    const res = await post(
      '/v1/messages',
      { model: 'claude-sonnet-4-5', max_tokens: 16, tools, messages: [{ role: 'user', content: 'Hi' }] },
      { provider: 'anthropic', api_key: 'sk-v', custom_host: anthropicMock.baseURL },
    );
    expect(res.status).toBe(200);
    expect(anthropicMock.requests.at(-1)!.body.tools).toEqual(tools);
  });
});

describe('text completions: best_of must exceed n (default 1)', () => {
  const completion = (extra: Record<string, unknown>) => ({ model: 'gpt-3.5-turbo-instruct', prompt: 'x', ...extra });

  test.each([
    ['best_of 0, n absent', { best_of: 0 }],
    ['best_of 1, n absent', { best_of: 1 }],
    ['best_of 1, n 1', { best_of: 1, n: 1 }],
    ['best_of equal to n', { best_of: 3, n: 3 }],
    ['best_of below n', { best_of: 2, n: 3 }],
  ])('%s is a 400 naming best_of', async (_name, extra) => {
    const before = mock.requests.length;
    await expectRefused(await post('/v1/completions', completion(extra)), 'best_of', /must exceed n \(which defaults to 1\)/);
    expect(mock.requests.length).toBe(before);
  });

  test.each([
    ['best_of 2, n absent', { best_of: 2 }],
    ['best_of above n', { best_of: 4, n: 3 }],
    ['best_of null', { best_of: null }],
  ])('%s passes', async (_name, extra) => {
    expect((await post('/v1/completions', completion(extra))).status).toBe(200);
  });

  test('best_of with stream: true is refused (not streamable)', async () => {
    await expectRefused(await post('/v1/completions', completion({ best_of: 2, stream: true })), 'best_of', /cannot be used with stream: true/);
  });
});
