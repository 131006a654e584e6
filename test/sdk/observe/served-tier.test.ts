import { describe, expect, test } from 'vitest';
import { servedTier } from '../../../sdk/observe/summary.js';

const sse = (...events: unknown[]) => Buffer.from(events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join(''));

describe('the service tier an answer was served at', () => {
  test("only the answer's own field: a key inside an echoed value (metadata, a tool's schema) or inside a string never counts", () => {
    const response = {
      id: 'resp_1',
      object: 'response',
      metadata: { service_tier: 'constructor', note: '"service_tier":"default"' },
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'say "service_tier": "flex"' }] }],
      service_tier: 'priority',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: { service_tier: { type: 'string' } } } }],
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    expect(servedTier(Buffer.from(JSON.stringify(response)), false)).toBe('priority');
    expect(servedTier(Buffer.from(JSON.stringify({ ...response, service_tier: undefined })), false)).toBeNull();
    expect(servedTier(Buffer.from('{"id":"x","choices":[]}'), false)).toBeNull();
  });

  test("a Responses stream: response.completed's tier, not the one response.created echoes", () => {
    const bytes = sse(
      { type: 'response.created', response: { id: 'r', metadata: { service_tier: 'flex' }, service_tier: 'auto' } },
      { type: 'response.output_text.delta', delta: '"service_tier":"flex"' },
      { type: 'response.completed', response: { id: 'r', metadata: { service_tier: 'flex' }, service_tier: 'priority', tools: [] } },
    );
    expect(servedTier(bytes, true)).toBe('priority');
  });

  test("a chat stream: every chunk names it; the last one's", () => {
    const chunk = (tier: string, content: string) => ({ id: 'c', object: 'chat.completion.chunk', service_tier: tier, choices: [{ index: 0, delta: { content } }] });
    expect(servedTier(sse(chunk('default', 'data: "service_tier":"flex"'), chunk('flex', 'hi'), '[DONE]'), true)).toBe('flex');
    expect(servedTier(sse({ id: 'c', choices: [] }, '[DONE]'), true)).toBeNull();
  });
});
