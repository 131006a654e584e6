import { expect } from 'vitest';
import { anthropic } from '../../../plugins/providers/anthropic/index.js';
import { startAnthropicContractMock } from '../../mocks/contract/anthropic.js';
import { providerContract } from '../../../server/testing/index.js';

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'anthropic',
  plugins: () => [anthropic()],
  startMock: startAnthropicContractMock,
  target: (mock) => ({ provider: 'anthropic', api_key: 'sk-ant-contract', custom_host: mock.baseURL }),
  model: 'claude-sonnet-4-5',
  reportsCachedTokens: true,
  nativeMessages: true,
  countsTokens: true,
  mapStatus: (upstream) => (upstream === 529 ? 503 : upstream),
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/v1/messages');
      expect(seen.headers['x-api-key']).toBe('sk-ant-contract');
      expect(seen.headers['anthropic-version']).toBe('2023-06-01');
      expect(seen.headers.authorization).toBeUndefined();
      expect(seen.body).toEqual({
        model: 'claude-sonnet-4-5',
        max_tokens: 4096,
        system: [{ type: 'text', text: 'Be terse.' }],
        messages: [{ role: 'user', content: 'Hi' }],
        stream: false,
      });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '18C' }] },
      ]);
    },
    image(seen, kind) {
      const content = seen.body.messages[0].content;
      expect(content[0]).toEqual({ type: 'text', text: 'What is this?' });
      expect(content[1]).toEqual(
        kind === 'url'
          ? { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }
          : { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      );
    },
    tools(seen) {
      expect(seen.body.tools).toEqual([
        {
          name: 'get_weather',
          description: 'Weather for a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ]);
      expect(seen.body.tool_choice).toBeUndefined();
    },
  },
});
