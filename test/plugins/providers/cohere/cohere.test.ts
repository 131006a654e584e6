import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../../../plugins/config/index.js';
import { cohere, cohereStreamTranslator, toCohereChat } from '../../../../plugins/providers/cohere/index.js';
import { serveGateway } from '../../../helpers/serve.js';
import { COHERE_KEY, startCohereContractMock } from '../../../mocks/contract/cohere.js';
import type { ContractMock } from '../../../../server/testing/index.js';

describe('OpenAI → Cohere chat v2', () => {
  test('parameters, stop, top_p/top_k, response_format json_schema, dropped fields', () => {
    const out = toCohereChat(
      {
        model: 'command-a',
        messages: [{ role: 'developer', content: [{ type: 'text', text: 'D' }] }, { role: 'user', content: 'Hi' }],
        max_tokens: 10,
        max_completion_tokens: 20,
        temperature: 0.3,
        top_p: 0.8,
        top_k: 40,
        seed: 7,
        frequency_penalty: 0.1,
        presence_penalty: 0.2,
        stop: 'END',
        logit_bias: { 1: 2 },
        user: 'u',
        parallel_tool_calls: false,
        stream_options: { include_usage: true },
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      },
      'cohere',
      true,
    );
    expect(out).toEqual({
      model: 'command-a',
      messages: [{ role: 'system', content: 'D' }, { role: 'user', content: 'Hi' }],
      max_tokens: 20,
      temperature: 0.3,
      seed: 7,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      p: 0.8,
      k: 40,
      stop_sequences: ['END'],
      response_format: { type: 'json_object', json_schema: { type: 'object' } },
      stream: true,
    });
  });

  test('tool_choice: required → REQUIRED, none → NONE, a named function → REQUIRED with only that tool', () => {
    const tools = [
      { type: 'function', function: { name: 'a', parameters: { type: 'object' } } },
      { type: 'function', function: { name: 'b' } },
    ];
    const base = { model: 'm', messages: [{ role: 'user', content: 'x' }], tools };
    expect(toCohereChat({ ...base, tool_choice: 'required' }, 'cohere', false).tool_choice).toBe('REQUIRED');
    expect(toCohereChat({ ...base, tool_choice: 'none' }, 'cohere', false).tool_choice).toBe('NONE');
    expect(toCohereChat({ ...base, tool_choice: 'auto' }, 'cohere', false).tool_choice).toBeUndefined();
    const named = toCohereChat({ ...base, tool_choice: { type: 'function', function: { name: 'b' } } }, 'cohere', false);
    expect(named.tool_choice).toBe('REQUIRED');
    expect(named.tools).toEqual([{ type: 'function', function: { name: 'b', parameters: { type: 'object', properties: {} } } }]);
  });

  test('n > 1 and unknown roles are 400s naming the field', () => {
    expect(() => toCohereChat({ model: 'm', messages: [], n: 2 }, 'cohere', false)).toThrow(/n > 1/);
    expect(() => toCohereChat({ model: 'm', messages: [{ role: 'function', content: 'x' }] }, 'cohere', false)).toThrow(/messages\[0\]\.role/);
  });
});

describe('Cohere stream translation', () => {
  const run = (events: string[]) => {
    const t = cohereStreamTranslator({ model: 'm', includeUsage: true, onUsage: () => {} });
    return (events.map((e) => t.push(Buffer.from(e))).join('') + t.end()).split('\n\n').filter((e) => e !== '').map((e) => e.slice(6));
  };
  const ev = (d: Record<string, unknown>) => `event: ${d.type}\ndata: ${JSON.stringify(d)}\n\n`;

  test('ERROR_TOXIC finishes as content_filter; usage follows; [DONE] last', () => {
    const out = run([ev({ type: 'message-start', id: 'abc' }), ev({ type: 'message-end', delta: { finish_reason: 'ERROR_TOXIC', usage: { tokens: { input_tokens: 1, output_tokens: 0 } } } })]);
    expect(JSON.parse(out[0]!).id).toBe('abc');
    expect(JSON.parse(out[1]!).choices[0].finish_reason).toBe('content_filter');
    expect(JSON.parse(out[2]!).usage.prompt_tokens).toBe(1);
    expect(out[3]).toBe('[DONE]');
  });

  test('a stream cut before message-end is an error event, then [DONE]', () => {
    const out = run([ev({ type: 'message-start', id: 'abc' }), ev({ type: 'content-delta', index: 0, delta: { message: { content: { text: 'x' } } } })]);
    expect(JSON.parse(out.at(-2)!).error.type).toBe('upstream_error');
    expect(out.at(-1)).toBe('[DONE]');
  });
});

describe('cohere plugin: embeddings', () => {
  let mock: ContractMock;
  let gw: Awaited<ReturnType<typeof serveGateway>>;
  beforeAll(async () => {
    mock = await startCohereContractMock();
    gw = await serveGateway({ plugins: [config(), cohere()] });
  });
  afterAll(async () => {
    await gw.close();
    await mock.close();
  });

  test('Embed v2: texts, input_type default, dimensions → output_dimension, usage from billed units, base64', async () => {
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'cohere', api_key: COHERE_KEY, custom_host: mock.baseURL }) },
      body: JSON.stringify({ model: 'embed-v4.0', input: ['a', 'b'], dimensions: 256 }),
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(mock.requests.at(-1)!.body).toEqual({ model: 'embed-v4.0', texts: ['a', 'b'], input_type: 'search_document', embedding_types: ['float'], output_dimension: 256 });
    expect(body).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0, 0.5, -0.5] },
        { object: 'embedding', index: 1, embedding: [1, 0.5, -0.5] },
      ],
      model: 'embed-v4.0',
      usage: { prompt_tokens: 5, total_tokens: 5 },
    });
    const b64 = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-config': JSON.stringify({ provider: 'cohere', api_key: COHERE_KEY, custom_host: mock.baseURL }) },
      body: JSON.stringify({ model: 'embed-v4.0', input: 'a', encoding_format: 'base64', input_type: 'search_query' }),
    });
    const data = ((await b64.json()) as any).data[0].embedding as string;
    expect(Buffer.from(data, 'base64').readFloatLE(4)).toBe(0.5);
    expect(mock.requests.at(-1)!.body.input_type).toBe('search_query');
  });
});
