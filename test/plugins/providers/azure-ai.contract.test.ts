import { expect } from 'vitest';
import { azureAI } from '../../../plugins/providers/azure/ai/index.js';
import { AZURE_KEY, startAzureAIContractMock } from '../../mocks/contract/azure.js';
import { providerContract } from '../../../server/testing/index.js';

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'azure-ai',
  plugins: () => [azureAI()],
  startMock: () => startAzureAIContractMock(),
  target: (mock) => ({ provider: 'azure-ai', api_key: AZURE_KEY, azure_deployment_type: 'serverless', azure_endpoint_name: 'mistral-ep', azure_region: 'eastus2', azure_api_version: '2024-05-01-preview', custom_host: mock.baseURL }),
  model: 'Mistral-large-2411',
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/chat/completions?api-version=2024-05-01-preview');
      expect(seen.headers.authorization).toBe(`Bearer ${AZURE_KEY}`);
      expect(seen.headers['extra-parameters']).toBe('pass-through');
      expect(seen.headers['azureml-model-deployment']).toBeUndefined();
      expect(seen.body).toEqual({ model: 'Mistral-large-2411', messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }] });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '18C' });
    },
    image(seen, kind) {
      const url = kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=';
      expect(seen.body.messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url } });
    },
    tools(seen) {
      expect(seen.body.tools).toEqual(TOOLS);
    },
  },
});
