import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { addImplicitPromptTokens, bundledPricing, captureResponses, createLogger, estimatePromptTokens, estimateRequestPromptTokens, GatewayError, RequestContext, requestSummary, type GatewayResponse, type PluginAPI } from '../../sdk/index.js';

/** A request whose streamed answer went out through the shared response capture, as the log store and metrics see it. */
function streamedRequest(sse: string): RequestContext {
  const ctx = new RequestContext('POST', '/v1/chat/completions', {}, null, createLogger({ level: 'silent' }));
  let tap: ((response: GatewayResponse, ctx: RequestContext) => GatewayResponse) | undefined;
  // Only what captureResponses touches of the plugin API: it registers its limits and one afterResponse tap.
  const api = { tryResolve: () => undefined, provide: () => undefined, hooks: { afterResponse: { tap: (_: unknown, fn: typeof tap) => (tap = fn) } } } as unknown as PluginAPI;
  captureResponses(api, { scanLimit: 1 << 20, bodyLimit: 0 });
  const response = tap!({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: Readable.from([]), observers: null }, ctx);
  for (const o of response.observers!) {
    o.onChunk(Buffer.from(sse));
    o.onEnd?.(null);
  }
  ctx.status = 200;
  ctx.model = 'gpt-4o';
  // The provider's usage observer read the usage chunk already: the text is left to the log store to assemble.
  ctx.usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
  return ctx;
}

describe('requestSummary', () => {
  test('a summary made without the answer\'s text does not serve a caller that wants it; one made with it serves everyone', () => {
    const ctx = new RequestContext('POST', '/v1/chat/completions', {}, null, createLogger({ level: 'silent' }));
    ctx.status = 429;
    ctx.error = new GatewayError('rate_limited', 'slow down');
    const pricing = bundledPricing();
    // A settling or metrics tap that ran first, wanting no text.
    const lean = requestSummary(ctx, { pricing, wantText: false });
    expect(lean.responseText).toBeNull();
    expect(requestSummary(ctx, { pricing, wantText: false })).toBe(lean);
    // The log store with body capture still gets the text.
    const full = requestSummary(ctx, { pricing, wantText: true });
    expect(full.responseText).toBe(JSON.stringify(ctx.error.toEnvelope()));
    expect(requestSummary(ctx, { pricing, wantText: false })).toBe(full);
    expect(requestSummary(ctx, { pricing, wantText: true })).toBe(full);
  });
});

describe('a streamed answer whose usage is known', () => {
  const sse = `data: ${JSON.stringify({ model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta: { content: 'Hé' } }] })}\n\ndata: [DONE]\n\n`;

  test('the model it names is read, with or without its text; the text is handed on as sent', () => {
    const pricing = bundledPricing();
    const lean = requestSummary(streamedRequest(sse), { pricing, wantText: false });
    expect(lean.modelAnswered).toBe('gpt-4o-2024-08-06');
    expect(lean.responseStream).toBeNull();
    const full = requestSummary(streamedRequest(sse), { pricing, wantText: true });
    expect(full.modelAnswered).toBe('gpt-4o-2024-08-06');
    expect(full.responseStream).toBe(sse);
    expect(full.responseText).toBeNull();
    expect(full.responseCut).toBe(false);
  });
});

describe('prompt estimates', () => {
  test('the front doors\' prompt fields count: Responses instructions and tool outputs, Messages system', () => {
    // 8 characters of instructions + 4 of input.
    expect(estimatePromptTokens({ instructions: 'Be terse', input: 'abcd' })).toBe(3);
    // Items: a message's parts, a tool output (as a chat tool message's content counts).
    expect(estimatePromptTokens({ input: [{ role: 'user', content: [{ type: 'input_text', text: 'abcd' }] }, { type: 'function_call_output', call_id: 'c', output: 'efghijkl' }] })).toBe(3);
    // Messages: a system string or text blocks, and the messages' blocks (tool results included).
    expect(estimatePromptTokens({ system: 'abcdefgh', messages: [{ role: 'user', content: 'abcd' }] })).toBe(3);
    expect(estimatePromptTokens({ system: [{ type: 'text', text: 'abcdefgh' }], messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'abcd' }] }] })).toBe(3);
  });

  test('prompt a door adds beyond the body (a rebuilt conversation) is part of the request\'s estimate', () => {
    const ctx = new RequestContext('POST', '/v1/responses', {}, null, createLogger({ level: 'silent' }));
    ctx.body = { model: 'm', input: 'abcd' };
    expect(estimateRequestPromptTokens(ctx)).toBe(1);
    addImplicitPromptTokens(ctx, 40);
    addImplicitPromptTokens(ctx, 2.5);
    addImplicitPromptTokens(ctx, -3);
    expect(estimateRequestPromptTokens(ctx)).toBe(44);
  });
});
