// @ts-check
/**
 * The package's own tests, on the gateway's plugin test kit (`switchyard-gateway/testing`): the provider
 * contract every bundled provider passes (chat, streams, errors, usage, retries, the Responses and Messages
 * front doors), against a mock that speaks Quill's wire format, with tools and images refused as Quill has
 * neither; then what is Quill's own: the prompt, the parameters, the key, the stream's edge cases.
 * `npm test` in this folder runs them with vitest.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { providerContract, startTestGateway } from 'switchyard-gateway/testing';
import quill, { flatten, quillStream, toQuillRequest } from '../index.js';
import { startQuillMock } from './quill-mock.js';

const KEY = 'quill-contract-key';

providerContract({
  provider: 'quill',
  plugins: () => [quill()],
  startMock: startQuillMock,
  target: (mock) => ({ provider: 'quill', api_key: KEY, custom_host: mock.baseURL }),
  model: 'quill-1',
  reportsCachedTokens: true,
  supports: { tools: false, images: false },
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/v1/generate');
      expect(seen.headers['x-quill-key']).toBe(KEY);
      expect(seen.body).toEqual({ prompt: 'System: Be terse.\n\nUser: Hi\n\nAssistant:' });
    },
  },
});

describe('Quill specifics', () => {
  /** @type {Awaited<ReturnType<typeof startQuillMock>>} */
  let mock;
  /** @type {import('switchyard-gateway/testing').TestGateway} */
  let gw;

  beforeAll(async () => {
    mock = await startQuillMock();
    gw = await startTestGateway({ plugins: [quill({ apiKey: 'quill-default-key' })] });
  });
  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  /**
   * @param {Record<string, unknown>} body
   * @param {Record<string, unknown>} [target]
   */
  const chat = (body, target = { api_key: KEY }) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'quill', custom_host: mock.baseURL, ...target }) },
      body: JSON.stringify({ model: 'quill-1', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    });

  test('the conversation is one prompt: a labelled paragraph per message, developer as System, text parts one per line, then Assistant:', async () => {
    const messages = [
      { role: 'developer', content: 'Answer in French.' },
      { role: 'user', content: [{ type: 'text', text: 'Two lines:' }, { type: 'text', text: 'here.' }] },
      { role: 'assistant', content: 'Oui.' },
      { role: 'user', content: 'Merci' },
    ];
    const res = await chat({ messages });
    expect(res.status).toBe(200);
    expect(mock.requests.at(-1)?.body.prompt).toBe('System: Answer in French.\n\nUser: Two lines:\nhere.\n\nAssistant: Oui.\n\nUser: Merci\n\nAssistant:');
    expect(flatten(messages)).toBe(mock.requests.at(-1)?.body.prompt);
  });

  test('max_completion_tokens (else max_tokens), temperature and stop (always a list) are sent; model and the rest are not', async () => {
    await chat({ max_completion_tokens: 64, max_tokens: 10, temperature: 0.2, stop: 'END', top_p: 0.5, seed: 7, user: 'u-1' });
    expect(mock.requests.at(-1)?.body).toEqual({ prompt: 'User: Hi\n\nAssistant:', max_tokens: 64, temperature: 0.2, stop: ['END'] });
    await chat({ max_tokens: 10, stop: ['a', 'b'], stream: true, stream_options: { include_usage: true } }).then((r) => r.text());
    expect(mock.requests.at(-1)?.body).toEqual({ prompt: 'User: Hi\n\nAssistant:', max_tokens: 10, stop: ['a', 'b'], stream: true });
  });

  test("the key goes in x-quill-key: the target's, else the plugin's apiKey option; the answer names the model asked for", async () => {
    const res = await chat({});
    expect(mock.requests.at(-1)?.headers['x-quill-key']).toBe(KEY);
    expect((await res.json()).model).toBe('quill-1');
    await chat({}, {});
    expect(mock.requests.at(-1)?.headers['x-quill-key']).toBe('quill-default-key');
  });

  test("a failure's kind is the envelope's code and, mapped, its type", async () => {
    mock.next({ kind: 'error', status: 401 });
    const res = await chat({});
    expect(res.status).toBe(401);
    expect((await res.json()).error).toEqual({ message: 'Mock error 401', type: 'authentication_error', param: null, code: 'auth' });
    mock.next({ kind: 'text' });
  });

  test('refusals name the field and the provider: tool results, tool calls, n > 1', () => {
    const refusal = (/** @type {Record<string, unknown>} */ body) => {
      try {
        toQuillRequest({ model: 'quill-1', ...body });
      } catch (err) {
        const e = /** @type {{ status: number, param: string, message: string }} */ (err);
        return { status: e.status, param: e.param, message: e.message };
      }
      throw new Error('not refused');
    };
    expect(refusal({ messages: [{ role: 'tool', tool_call_id: 'c', content: '18C' }] })).toMatchObject({ status: 400, param: 'messages[0].role', message: expect.stringContaining('"quill"') });
    expect(refusal({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c' }] }] })).toMatchObject({ param: 'messages[0].tool_calls' });
    expect(refusal({ messages: [{ role: 'user', content: 'Hi' }], n: 2 })).toMatchObject({ param: 'n', message: expect.stringContaining('"quill"') });
    expect(refusal({ messages: [{ role: 'user', content: 'Hi' }], functions: [{ name: 'f' }] })).toMatchObject({ param: 'functions' });
    // tool_choice alone has nothing to choose from: dropped, not refused.
    expect(toQuillRequest({ messages: [{ role: 'user', content: 'Hi' }], tool_choice: 'auto', tools: [] })).toEqual({ prompt: 'User: Hi\n\nAssistant:' });
  });
});

describe('the stream translator on its own', () => {
  /** @type {import('switchyard-gateway/sdk').OpenAIUsage[]} */
  let usages = [];
  const translate = (/** @type {string[]} */ pieces, includeUsage = true) => {
    usages = [];
    const t = quillStream({ model: 'quill-1', includeUsage, onUsage: (u) => usages.push(u) });
    const text = pieces.map((p) => t.push(Buffer.from(p))).join('') + t.end();
    return text
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => (e === 'data: [DONE]' ? '[DONE]' : JSON.parse(e.slice(6))));
  };

  test('lines cut anywhere (a multi-byte character too): role, deltas, finish, usage, [DONE]', () => {
    const events = translate(['{"delta":"Bon', 'jour "}\n{"delta":"\u00e0', ' toi"}\n{"done":{"finish":"max_tokens","tokens":{"in":5,"ou', 't":3}}}\n']);
    expect(events[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(events.slice(1, 3).map((e) => e.choices[0].delta.content)).toEqual(['Bonjour ', 'à toi']);
    expect(events[3].choices[0].finish_reason).toBe('length');
    expect(events[4]).toMatchObject({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } });
    expect(events[5]).toBe('[DONE]');
    expect(usages).toEqual([{ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }]);
  });

  test('a failure line, a line that is not JSON, an end without done: the error event and [DONE], nothing after', () => {
    const failed = translate(['{"delta":"Hel"}\n{"failure":{"reason":"Over quota","kind":"quota"}}\n{"delta":"ignored"}\n']);
    expect(failed.at(-2)).toEqual({ error: { message: 'Over quota', type: 'rate_limit_error', param: null, code: 'quota' } });
    expect(failed.at(-1)).toBe('[DONE]');
    expect(JSON.stringify(failed)).not.toContain('ignored');
    expect(translate(['{"delta":"Hel"}\n<html>\n']).at(-2).error).toMatchObject({ message: 'Quill sent a line that is not JSON.', type: 'upstream_error' });
    expect(translate(['{"delta":"Hel"}\n{"delta":"lo"}']).at(-2).error.message).toBe('The Quill stream ended before its done line.');
    expect(usages).toEqual([]);
  });

  test('no usage chunk unless the client asked; usage still reaches the log', () => {
    const events = translate(['{"done":{"finish":"done","tokens":{"in":1,"out":0}}}\n'], false);
    expect(events.map((e) => (e === '[DONE]' ? e : e.choices[0]?.finish_reason ?? 'role'))).toEqual(['role', 'stop', '[DONE]']);
    expect(usages).toHaveLength(1);
  });
});
