import { APIError } from 'openai';
import { describe, expect, test } from 'vitest';
import { expectRefused, providerContract, supported, type ContractMock, type ProviderContract } from '../../server/testing/provider-contract.js';

/*
 * The kit's `supports` (server/testing/provider-contract.ts): a provider without tools or images is
 * held to refusing them clearly, and a contract that claims support must bring the hooks that check it.
 */

const spec = (over: Partial<ProviderContract>): ProviderContract => ({
  provider: 'plain',
  plugins: () => [],
  startMock: () => Promise.reject(new Error('not started here')),
  target: () => ({ provider: 'plain' }),
  model: 'm',
  reportsCachedTokens: false,
  expectRequest: { systemAndUser() {} },
  ...over,
});

const mock = (): ContractMock => ({ baseURL: 'http://127.0.0.1:1', requests: [], next() {}, close: async () => {} });
const refusal = (param: string, message: string) => new APIError(400, { message, type: 'invalid_request_error', param, code: null }, message, new Headers());

describe('supports', () => {
  test('defaults to everything', () => {
    expect(supported(spec({}))).toEqual({ tools: true, images: true });
    expect(supported(spec({ supports: { tools: false } }))).toEqual({ tools: false, images: true });
  });

  test('a contract that supports tools or images without the hooks that check them refuses to run, naming them and the way out', () => {
    expect(() => providerContract(spec({}))).toThrow(
      'provider contract for "plain": expectRequest.toolRoundTrip and expectRequest.tools and expectRequest.image are required, unless the provider cannot carry them: then say so with supports: { tools: false, images: false }.',
    );
    expect(() => providerContract(spec({ supports: { tools: false } }))).toThrow(/expectRequest\.image is required, .* supports: \{ images: false \}/);
  });

  test('a refusal passes: a 400 naming the field and the provider, nothing sent', async () => {
    await expectRefused(spec({}), mock(), () => Promise.reject(refusal('tools', 'Provider "plain" does not support tools.')), (p) => p === 'tools', 'tools');
  });

  test('an answer, another status, another field, a message without the provider, or a request sent all fail', async () => {
    const fails = (request: () => Promise<unknown>, m = mock()) => expect(expectRefused(spec({}), m, request, (p) => p === 'tools', 'tools')).rejects.toThrow();
    await fails(() => Promise.resolve({ choices: [] }));
    await fails(() => Promise.reject(new APIError(500, { message: 'plain broke' }, 'plain broke', new Headers())));
    await fails(() => Promise.reject(refusal('messages', 'Provider "plain" does not support tools.')));
    await fails(() => Promise.reject(refusal('tools', 'Tools are not supported.')));
    const sent = mock();
    await fails(() => {
      sent.requests.push({ method: 'POST', path: '/', headers: {}, body: null });
      return Promise.reject(refusal('tools', 'Provider "plain" does not support tools.'));
    }, sent);
  });
});
