import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Target } from '../../../../core/index.js';
import { anthropic } from '../../../../plugins/providers/anthropic/index.js';
import { config } from '../../../../plugins/config/index.js';
import { requestLog } from '../../../../plugins/request-log/index.js';
import { startAnthropicContractMock } from '../../../mocks/contract/anthropic.js';
import type { ContractMock } from '../../../../server/testing/index.js';
import { sendJson, startRecordingServer } from '../../../../server/testing/index.js';
import { waitForLog } from '../../../helpers/gateway.js';
import { serveGateway } from '../../../helpers/serve.js';

type Gw = Awaited<ReturnType<typeof serveGateway>>;

function post(gw: Gw, target: Target, body: Record<string, unknown>) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify(target) },
    body: JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content: 'Hi' }], ...body }),
  });
}

describe('anthropic options', () => {
  test('are validated at start-up, naming the field', () => {
    expect(() => anthropic({ baseURL: 'not a url' })).toThrow(/anthropic.*baseURL/);
    expect(() => anthropic({ defaultMaxTokens: 0 })).toThrow(/defaultMaxTokens/);
    expect(() => anthropic({ unknown: 1 } as never)).toThrow(/anthropic/);
  });
});

describe('anthropic provider through the gateway', () => {
  let mock: ContractMock;
  let gw: Gw;
  let target: Target;

  beforeAll(async () => {
    mock = await startAnthropicContractMock();
    gw = await serveGateway({ plugins: [config(), requestLog(), anthropic({ defaultMaxTokens: 512, version: '2024-01-01', apiKey: 'sk-default' })] });
    target = { provider: 'anthropic', api_key: 'sk-ant-unit', custom_host: mock.baseURL };
  });
  afterAll(async () => {
    await gw.close();
    await mock.close();
  });

  test('headers, the defaultMaxTokens option, and usage recorded for the log', async () => {
    mock.next({ kind: 'text' });
    const res = await post(gw, target, {});
    expect(res.status).toBe(200);
    const seen = mock.requests.at(-1)!;
    expect(seen.headers['x-api-key']).toBe('sk-ant-unit');
    expect(seen.headers['anthropic-version']).toBe('2024-01-01');
    expect(seen.body.max_tokens).toBe(512);
    const line = await waitForLog(gw.logs, (l) => l.status === 200 && l.tokens !== null);
    expect(line.tokens).toEqual({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3 });
  });

  test('the apiKey option is used when the target has no key', async () => {
    mock.next({ kind: 'text' });
    const { api_key: _unused, ...keyless } = target;
    expect((await post(gw, keyless, {})).status).toBe(200);
    expect(mock.requests.at(-1)!.headers['x-api-key']).toBe('sk-default');
  });

  test('override_params are applied to the native body', async () => {
    mock.next({ kind: 'text' });
    const res = await post(gw, { ...target, override_params: { max_tokens: 77, temperature: 0.2 } }, { temperature: 0.9 });
    expect(res.status).toBe(200);
    expect(mock.requests.at(-1)!.body).toMatchObject({ max_tokens: 77, temperature: 0.2 });
  });

  test('upstream 529 → 503 with the envelope and the upstream message', async () => {
    mock.next({ kind: 'error', status: 529 });
    const res = await post(gw, target, {});
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: { message: 'Mock error 529', type: 'overloaded_error', param: null, code: null } });
  });

  test('streamed usage is recorded for the log', async () => {
    mock.next({ kind: 'text' });
    const res = await post(gw, target, { stream: true });
    expect(await res.text()).toContain('data: [DONE]');
    const line = await waitForLog(gw.logs, (l) => l.stream === true && l.tokens !== null);
    expect(line.tokens).toEqual({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cached_tokens: 3 });
  });

  test('n > 1, temperature > 1 and thinking (strict by default) are 400s before any upstream call', async () => {
    const before = mock.requests.length;
    for (const [body, param] of [
      [{ n: 3 }, 'n'],
      [{ temperature: 1.2 }, 'temperature'],
      [{ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    ] as const) {
      const res = await post(gw, target, body);
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { param: string; message: string } };
      expect(json.error.param).toBe(param);
      expect(json.error.message).toContain('anthropic');
    }
    expect(mock.requests.length).toBe(before);
  });
});

describe('anthropic provider: answers the contract mock does not give', () => {
  let gw: Gw;
  let upstream: Awaited<ReturnType<typeof startRecordingServer>>;
  let reply: (res: import('node:http').ServerResponse) => void = () => {};

  beforeAll(async () => {
    upstream = await startRecordingServer((_req, res) => reply(res));
    gw = await serveGateway({ plugins: [config(), anthropic()] });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  test('a non-JSON error body still gives the envelope with the upstream status', async () => {
    reply = (res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad gateway</html>');
    };
    const res = await post(gw, { provider: 'anthropic', api_key: 'k', custom_host: upstream.url }, {});
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: { message: 'The upstream answered 502.', type: 'api_error', param: null, code: null } });
  });

  test('strict_reference_compliance false: thinking is sent, and thinking blocks come back in content_blocks', async () => {
    reply = (res) =>
      sendJson(res, 200, {
        id: 'msg_t',
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [
          { type: 'thinking', thinking: 'Think.', signature: 'sig' },
          { type: 'text', text: 'Done.' },
        ],
        stop_reason: 'end_turn',
        usage: { input_tokens: 3, output_tokens: 4 },
      });
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const loose = { provider: 'anthropic', api_key: 'k', custom_host: upstream.url, strict_reference_compliance: false };
    const res = await post(gw, loose, { thinking });
    expect(res.status).toBe(200);
    expect(upstream.requests.at(-1)!.body.thinking).toEqual(thinking);
    const json = (await res.json()) as { choices: Array<{ message: Record<string, unknown> }> };
    expect(json.choices[0]!.message).toEqual({
      role: 'assistant',
      content: 'Done.',
      refusal: null,
      content_blocks: [
        { type: 'thinking', thinking: 'Think.', signature: 'sig' },
        { type: 'text', text: 'Done.' },
      ],
    });

    const strict = await post(gw, { ...loose, strict_reference_compliance: true }, {});
    expect(((await strict.json()) as { choices: Array<{ message: Record<string, unknown> }> }).choices[0]!.message).toEqual({ role: 'assistant', content: 'Done.', refusal: null });
  });

  test('a 2xx answer that is not JSON is a 502', async () => {
    reply = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"truncated');
    };
    const res = await post(gw, { provider: 'anthropic', api_key: 'k', custom_host: upstream.url }, {});
    expect(res.status).toBe(502);
  });
});
