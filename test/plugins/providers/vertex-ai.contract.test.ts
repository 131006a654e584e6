import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'vitest';
import type { Target } from '../../../core/index.js';
import { vertexAI } from '../../../plugins/providers/vertex-ai/index.js';
import { startVertexContractMock, type VertexContractMock } from '../../mocks/contract/vertex.js';
import { providerContract, type ContractMock, type ProviderContract, type SeenNativeRequest } from '../../../server/testing/index.js';

const PROJECT = 'proj-contract';
const REGION = 'us-central1';
const MODEL = 'gemini-2.5-flash';
const CLIENT_EMAIL = 'gateway-test@proj-contract.iam.gserviceaccount.com';
const KEY_ID = 'kid-contract-1';
const READY_TOKEN = 'ya29.ready-made-token';

const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

const serviceAccount = (mock: VertexContractMock) => ({
  type: 'service_account',
  project_id: PROJECT,
  private_key_id: KEY_ID,
  private_key: PRIVATE_PEM,
  client_email: CLIENT_EMAIL,
  client_id: '1234567890',
  token_uri: mock.tokenURL,
});

const startMock = () => startVertexContractMock({ publicKey, clientEmail: CLIENT_EMAIL, keyId: KEY_ID, apiKey: READY_TOKEN, project: PROJECT, region: REGION });

const geminiPath = new RegExp(`^/v1/projects/${PROJECT}/locations/${REGION}/publishers/google/models/${MODEL}:(generateContent|streamGenerateContent\\?alt=sse)$`);

function geminiExpectations(auth: (seen: SeenNativeRequest) => void): ProviderContract['expectRequest'] {
  return {
    systemAndUser(seen) {
      expect(seen.path).toMatch(geminiPath);
      auth(seen);
      expect(seen.body.systemInstruction).toEqual({ parts: [{ text: 'Be terse.' }] });
      expect(seen.body.contents).toEqual([{ role: 'user', parts: [{ text: 'Hi' }] }]);
    },
    toolRoundTrip(seen) {
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
      expect(seen.body.tools[0].functionDeclarations[0]).toEqual({
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      });
    },
  };
}

// 1. Service account: the gateway signs a JWT, the mock verifies it and issues the token it then expects.
let saMock: VertexContractMock;
providerContract({
  requireOpenAISchema: process.env.CI === 'true',
  provider: 'vertex-ai',
  plugins: () => [vertexAI()],
  startMock: async () => (saMock = await startMock()),
  target: (mock: ContractMock): Target => ({
    provider: 'vertex-ai',
    vertex_region: REGION,
    vertex_service_account_json: serviceAccount(mock as VertexContractMock),
    custom_host: mock.baseURL,
  }),
  model: MODEL,
  reportsCachedTokens: true,
  expectRequest: geminiExpectations((seen) => {
    expect(saMock.issued.length).toBeGreaterThanOrEqual(1);
    expect(saMock.lastTokenError).toBeNull();
    expect(seen.headers.authorization).toBe(`Bearer ${saMock.issued.at(-1)}`);
    // One token serves the whole suite: cached, not fetched per request.
    expect(saMock.tokenRequests).toBe(1);
  }),
});

// 2. A ready bearer token in api_key.
providerContract({
  provider: 'vertex-ai',
  plugins: () => [vertexAI()],
  startMock,
  target: (mock) => ({ provider: 'vertex-ai', api_key: READY_TOKEN, vertex_project_id: PROJECT, vertex_region: REGION, custom_host: mock.baseURL }),
  model: MODEL,
  reportsCachedTokens: true,
  expectRequest: geminiExpectations((seen) => {
    expect(seen.headers.authorization).toBe(`Bearer ${READY_TOKEN}`);
  }),
});

// 3. Claude on Vertex: Anthropic's Messages format at :rawPredict / :streamRawPredict, service-account auth.
const CLAUDE = 'claude-sonnet-4-5@20250929';
const claudePath = new RegExp(`^/v1/projects/${PROJECT}/locations/${REGION}/publishers/anthropic/models/${CLAUDE}:(rawPredict|streamRawPredict)$`);
let claudeMock: VertexContractMock;
providerContract({
  provider: 'vertex-ai',
  plugins: () => [vertexAI()],
  startMock: async () => (claudeMock = await startMock()),
  target: (mock: ContractMock): Target => ({
    provider: 'vertex-ai',
    vertex_region: REGION,
    vertex_service_account_json: serviceAccount(mock as VertexContractMock),
    custom_host: mock.baseURL,
  }),
  model: CLAUDE,
  nativeMessages: true,
  countsTokens: true,
  reportsCachedTokens: true,
  expectRequest: {
    systemAndUser(seen) {
      expect(seen.path).toMatch(claudePath);
      expect(seen.headers.authorization).toBe(`Bearer ${claudeMock.issued.at(-1)}`);
      expect(seen.headers['x-api-key']).toBeUndefined();
      expect(seen.body.anthropic_version).toBe('vertex-2023-10-16');
      expect(seen.body.model).toBeUndefined();
      expect(typeof seen.body.max_tokens).toBe('number');
      expect(JSON.stringify(seen.body.system)).toContain('Be terse.');
      expect(JSON.stringify(seen.body.messages)).toContain('Hi');
    },
    toolRoundTrip(seen) {
      expect(seen.path).toMatch(claudePath);
      const text = JSON.stringify(seen.body.messages);
      expect(text).toContain('"tool_use"');
      expect(text).toContain('"tool_result"');
      expect(text).toContain('call_1');
    },
    image(seen, kind) {
      expect(seen.path).toMatch(claudePath);
      expect(JSON.stringify(seen.body.messages)).toContain(kind === 'url' ? 'https://example.com/cat.png' : 'iVBORw0KGgo=');
    },
    tools(seen) {
      expect(seen.body.tools[0].name).toBe('get_weather');
    },
  },
});
