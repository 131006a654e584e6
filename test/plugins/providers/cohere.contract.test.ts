import { expect } from 'vitest';
import { cohere } from '../../../plugins/providers/cohere/index.js';
import { COHERE_KEY, startCohereContractMock } from '../../mocks/contract/cohere.js';
import { providerContract } from '../../../server/testing/index.js';

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'cohere',
  plugins: () => [cohere()],
  startMock: startCohereContractMock,
  target: (mock) => ({ provider: 'cohere', api_key: COHERE_KEY, custom_host: mock.baseURL }),
  model: 'command-a-03-2025',
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/v2/chat');
      expect(seen.headers.authorization).toBe(`Bearer ${COHERE_KEY}`);
      expect(seen.body).toEqual({
        model: 'command-a-03-2025',
        messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }],
        stream: false,
      });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      ]);
    },
    image(seen, kind) {
      const url = kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=';
      expect(seen.body.messages[0].content).toEqual([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url } }]);
    },
    tools(seen) {
      expect(seen.body.tools).toEqual([
        { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
      ]);
      expect(seen.body.tool_choice).toBeUndefined();
    },
  },
});
