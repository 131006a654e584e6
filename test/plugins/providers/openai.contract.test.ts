import { expect } from 'vitest';
import { openai } from '../../../plugins/providers/openai/index.js';
import { startOpenAIContractMock } from '../../../server/testing/index.js';
import { providerContract } from '../../../server/testing/index.js';

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'openai',
  plugins: () => [openai()],
  startMock: () => startOpenAIContractMock('/v1'),
  target: (mock) => ({ provider: 'openai', api_key: 'sk-contract', custom_host: mock.baseURL }),
  model: 'gpt-4o-mini',
  reportsCachedTokens: true,
  nativeResponses: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.path).toBe('/v1/chat/completions');
      expect(seen.headers.authorization).toBe('Bearer sk-contract');
      expect(seen.body.messages).toEqual([
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Hi' },
      ]);
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages[1].tool_calls[0].id).toBe('call_1');
      expect(seen.body.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '18C' });
    },
    image(seen, kind) {
      const part = seen.body.messages[0].content[1];
      expect(part.type).toBe('image_url');
      expect(part.image_url.url).toBe(kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=');
    },
    tools(seen) {
      expect(seen.body.tools[0].function.name).toBe('get_weather');
    },
  },
});
