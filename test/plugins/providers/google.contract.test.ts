import { expect } from 'vitest';
import { google } from '../../../plugins/providers/google/index.js';
import { startGoogleContractMock } from '../../mocks/contract/google.js';
import { providerContract, type SeenNativeRequest } from '../../../server/testing/index.js';

const MODEL = 'gemini-2.5-flash';

const expectGenerate = (seen: SeenNativeRequest) => {
  expect(seen.path).toMatch(new RegExp(`^/v1beta/models/${MODEL}:(generateContent|streamGenerateContent\\?alt=sse)$`));
  expect(seen.headers['x-goog-api-key']).toBe('goog-contract-key');
  expect(seen.headers.authorization).toBeUndefined();
};

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'google',
  plugins: () => [google()],
  startMock: () => startGoogleContractMock('goog-contract-key'),
  target: (mock) => ({ provider: 'google', api_key: 'goog-contract-key', custom_host: mock.baseURL }),
  model: MODEL,
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expectGenerate(seen);
      expect(seen.body.systemInstruction).toEqual({ parts: [{ text: 'Be terse.' }] });
      expect(seen.body.contents).toEqual([{ role: 'user', parts: [{ text: 'Hi' }] }]);
      expect(seen.body.model).toBeUndefined();
    },
    toolRoundTrip(seen) {
      expectGenerate(seen);
      expect(seen.body.contents).toEqual([
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18C' } } }] },
      ]);
    },
    image(seen, kind) {
      const part = seen.body.contents[0].parts[1];
      if (kind === 'url') expect(part).toEqual({ fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.png' } });
      else expect(part).toEqual({ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } });
    },
    tools(seen) {
      expect(seen.body.tools).toEqual([
        {
          functionDeclarations: [
            { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
          ],
        },
      ]);
    },
  },
});
