import { expect } from 'vitest';
import { bedrock } from '../../../plugins/providers/bedrock/index.js';
import { AWS_KEY_ID, AWS_SECRET, startBedrockContractMock } from '../../mocks/contract/bedrock.js';
import { providerContract } from '../../../server/testing/index.js';

/**
 * Bedrock has no URL image source (it takes bytes or s3://). By default a URL
 * image is a 400 naming the field (tested in bedrock/plugin.test.ts); the
 * contract runs with a resolver that inlines the contract's one image URL, the
 * extension point a deployment uses to allow URL images.
 */
const resolveImageURL = async (url: string) => {
  if (url !== 'https://example.com/cat.png') throw new Error(`unexpected image URL ${url}`);
  return { format: 'png', bytes: 'iVBORw0KGgo=' };
};

providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'bedrock',
  plugins: () => [bedrock({ resolveImageURL })],
  startMock: startBedrockContractMock,
  target: (mock) => ({ provider: 'bedrock', aws_access_key_id: AWS_KEY_ID, aws_secret_access_key: AWS_SECRET, aws_region: 'us-east-1', custom_host: mock.baseURL }),
  model: 'anthropic.claude-3-haiku-20240307-v1:0',
  reportsCachedTokens: true,
  nativeMessages: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse');
      expect(seen.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/);
      expect(seen.body).toEqual({ system: [{ text: 'Be terse.' }], messages: [{ role: 'user', content: [{ text: 'Hi' }] }] });
    },
    toolRoundTrip(seen) {
      expect(seen.body.messages).toEqual([
        { role: 'user', content: [{ text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Paris' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'call_1', content: [{ text: '18C' }] } }] },
      ]);
    },
    image(seen) {
      expect(seen.body.messages[0].content).toEqual([{ text: 'What is this?' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }]);
    },
    tools(seen) {
      expect(seen.body.toolConfig).toEqual({
        tools: [
          {
            toolSpec: {
              name: 'get_weather',
              description: 'Weather for a city',
              inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
            },
          },
        ],
      });
    },
  },
});
