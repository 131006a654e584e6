// @ts-check
/**
 * The package's own tests, on the gateway's plugin test kit (`switchyard-gateway/testing`): the provider
 * contract every bundled provider passes (chat, streams, tools, errors, usage, retries, the Responses and
 * Messages front doors), against an OpenAI-format mock, and the check contract every bundled check passes.
 * `npm test` in this folder runs them with vitest.
 */
import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import { checkContract, providerContract, startOpenAIContractMock } from 'switchyard-gateway/testing';
import acme, { acmeChecks } from '../index.js';

const KEY = 'sk-acme-contract';
/** @param {{ body: unknown, headers: Record<string, unknown> }} seen */
const signed = (seen) => expect(seen.headers['x-acme-signature']).toBe(createHmac('sha256', KEY).update(JSON.stringify(seen.body)).digest('hex'));

providerContract({
  provider: 'acme',
  plugins: () => [acme({ defaultRegion: 'us' })],
  startMock: () => startOpenAIContractMock('/v1'),
  target: (mock) => ({ provider: 'acme', api_key: KEY, custom_host: mock.baseURL }),
  model: 'acme-large',
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.path).toBe('/v1/chat/completions');
      expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(seen.headers['x-acme-region']).toBe('us');
      signed(seen);
      expect(seen.body).toEqual({ model: 'acme-large', messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }] });
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
      signed(seen);
    },
  },
});

checkContract({
  check: 'acme.maxDigits',
  plugins: () => [acmeChecks()],
  cases: [
    { parameters: { max: 3 }, pass: ['Call 123.', 'No digits at all.'], fail: ['Card 4111 1111 1111 1111', 'Arabic-Indic digits ٠١٢٣'] },
    { parameters: { max: 0 }, pass: ['none'], fail: ['1'] },
  ],
  refused: [{ max: -1 }, { max: 1.5 }, { max: '3' }, {}],
});
