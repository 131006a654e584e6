import { describe, expect, test } from 'vitest';
import { createGateway } from '../../../core/index.js';
import { azureAI } from '../../../plugins/providers/azure/ai/index.js';
import { azureOpenAI } from '../../../plugins/providers/azure/openai/index.js';
import { bedrock } from '../../../plugins/providers/bedrock/index.js';
import { cohere } from '../../../plugins/providers/cohere/index.js';
import { rerank } from '../../../plugins/rerank/index.js';
import { memoryLogger } from '../../helpers/gateway.js';

describe('the Providers II plugins together', () => {
  test.each([
    ['rerank first', () => [rerank(), cohere(), bedrock(), azureOpenAI(), azureAI()]],
    ['rerank last', () => [cohere(), bedrock(), azureOpenAI(), azureAI(), rerank()]],
  ])('boot in any order (%s): the shared rerank route and each provider are registered once (a duplicate would throw)', async (_name, plugins) => {
    const gateway = createGateway({ plugins: plugins(), logger: memoryLogger().logger });
    try {
      await expect(gateway.ready).resolves.toBeUndefined();
    } finally {
      await gateway.close(100);
    }
  });

  test('bad options fail at start-up with the field path', () => {
    expect(() => rerank({ providers: ['pinecone' as never] })).toThrow(/Invalid options for rerank: providers\[0\]/);
    expect(() => azureAI({ extraParameters: 'sometimes' as never })).toThrow(/extraParameters/);
    expect(() => bedrock({ runtimeHost: 'not a url' })).toThrow(/runtimeHost/);
    expect(() => azureOpenAI({ entra: { authority: 'nope' } })).toThrow(/entra\.authority/);
    expect(() => cohere({ apiKey: '' })).toThrow(/apiKey/);
  });
});
