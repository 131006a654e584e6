import { expect } from 'vitest';
import { openaiCompatible } from '../../../plugins/providers/openai-compatible/index.js';
import { startOpenAIContractMock } from '../../../server/testing/index.js';
import { providerContract, type SeenNativeRequest } from '../../../server/testing/index.js';

const expectRequest = (path: string, auth: string | undefined) => ({
  systemAndUser(seen: SeenNativeRequest) {
    expect(seen.path).toBe(path);
    expect(seen.headers.authorization).toBe(auth);
    expect(seen.body.messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
    ]);
  },
  toolRoundTrip(seen: SeenNativeRequest) {
    expect(seen.body.messages[2].role).toBe('tool');
    expect(seen.body.messages[2].tool_call_id).toBe(seen.body.messages[1].tool_calls[0].id);
  },
  image(seen: SeenNativeRequest, kind: 'url' | 'base64') {
    expect(seen.body.messages[0].content[1].image_url.url).toBe(kind === 'url' ? 'https://example.com/cat.png' : 'data:image/png;base64,iVBORw0KGgo=');
  },
  tools(seen: SeenNativeRequest) {
    expect(seen.body.tools[0].function.name).toBe('get_weather');
  },
});

// One row per kind of behaviour: plain pass-through, normalised answers, request rewriting, no key.
const rows = [
  { provider: 'groq', basePath: '/openai/v1', key: 'gsk-test' },
  { provider: 'together-ai', basePath: '/v1', key: 'tg-test' },
  { provider: 'mistral-ai', basePath: '/v1', key: 'ms-test' },
  { provider: 'deepseek', basePath: '', key: 'ds-test' },
  { provider: 'fireworks-ai', basePath: '/inference/v1', key: 'fw-test' },
  { provider: 'ollama', basePath: '/v1', key: undefined },
];

for (const row of rows) {
  providerContract({
    requireOpenAISchema: process.env.CI === 'true',
    provider: row.provider,
    plugins: () => [openaiCompatible()],
    startMock: () => startOpenAIContractMock(row.basePath),
    target: (mock) => ({ provider: row.provider, custom_host: mock.baseURL, ...(row.key ? { api_key: row.key } : {}) }),
    model: 'some-model',
    reportsCachedTokens: true,
    expectRequest: expectRequest(`${row.basePath}/chat/completions`, row.key ? `Bearer ${row.key}` : undefined),
  });
}
