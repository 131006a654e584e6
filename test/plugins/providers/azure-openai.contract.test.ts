import { expect } from 'vitest';
import { azureOpenAI } from '../../../plugins/providers/azure/openai/index.js';
import { AZURE_KEY, startAzureOpenAIContractMock } from '../../mocks/contract/azure.js';
import { providerContract } from '../../../server/testing/index.js';

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'azure-openai',
  plugins: () => [azureOpenAI()],
  startMock: startAzureOpenAIContractMock,
  target: (mock) => ({ provider: 'azure-openai', api_key: AZURE_KEY, resource_name: 'contoso', deployment_id: 'gpt4o-dep', api_version: '2024-10-21', custom_host: mock.baseURL }),
  model: 'gpt-4o-mini',
  reportsCachedTokens: true,
  nativeResponses: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/openai/deployments/gpt4o-dep/chat/completions?api-version=2024-10-21');
      expect(seen.headers['api-key']).toBe(AZURE_KEY);
      expect(seen.headers.authorization).toBeUndefined();
      expect(seen.body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }] });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      ]);
    },
    image(seen, kind) {
      const url = kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=';
      expect(seen.body.messages[0].content).toEqual([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url } }]);
    },
    tools(seen) {
      expect(seen.body.tools).toEqual(TOOLS);
    },
  },
});
