import { GatewayError, type GatewayResponse, type UpstreamResponse } from '../../core/index.js';
import { completionId, type OpenAIUsage } from '../openai/chunks.js';
import { errorAnswer } from '../openai/translate.js';
import { errorTypeForStatus } from './to-message.js';
import { finishReason, mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';
import { isObject } from '../json-object.js';

/**
 * Pure translation between the OpenAI chat format and Anthropic's Messages API
 * (shared/providers/anthropic.md). Also used by vertex-ai for Anthropic models
 * on Vertex, so nothing here reads a request context or a target.
 */
export { toAnthropicRequest, type AnthropicRequestOptions } from './request.js';
export { anthropicStreamTranslator, type AnthropicStreamOptions } from './stream.js';
export { finishReason, mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';

type Json = Record<string, unknown>;

/**
 * A native `message` → a `chat.completion` object and its usage. `content` is
 * the joined text blocks (null when the answer is only tool calls). With
 * `strict: false`, `message.content_blocks` also carries the thinking blocks
 * (with their signatures, so a client can replay them) and the text blocks.
 */
export function fromAnthropicMessage(json: unknown, options: { strict: boolean }): { completion: Record<string, unknown>; usage: OpenAIUsage } {
  if (!isObject(json) || !Array.isArray(json.content)) {
    throw new GatewayError('upstream_invalid_response', 'The upstream answer is not an Anthropic message.');
  }
  let text = '';
  let hasText = false;
  const toolCalls: Json[] = [];
  const blocks: Json[] = [];
  for (const block of json.content as unknown[]) {
    if (!isObject(block)) continue;
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') {
          text += block.text;
          hasText = true;
          blocks.push({ type: 'text', text: block.text });
        }
        break;
      case 'tool_use':
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
        break;
      case 'thinking':
        blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
        break;
      case 'redacted_thinking':
        blocks.push({ type: 'redacted_thinking', data: block.data });
        break;
      default:
        // Server tool blocks and future block types have no OpenAI equivalent.
        break;
    }
  }
  // `refusal` is required (a string or null) on every choice's message by OpenAI's schema.
  const message: Json = { role: 'assistant', content: hasText || toolCalls.length === 0 ? text : null, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (!options.strict && blocks.length > 0) message.content_blocks = blocks;

  const counts: AnthropicCounts = {};
  mergeCounts(counts, json.usage);
  const usage = usageFromCounts(counts);
  const completion: Json = {
    id: typeof json.id === 'string' && json.id !== '' ? json.id : completionId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof json.model === 'string' ? json.model : '',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(json.stop_reason) }],
    usage,
  };
  return { completion, usage };
}

/**
 * A native error answer (`{type:"error", error:{type, message}, request_id}`)
 * in the gateway envelope: message and `error.type` kept, retry hints passed
 * on, 529 (overloaded) answered as 503. `json` may be null (a body that was not
 * JSON): the envelope then names the upstream status.
 */
export function anthropicErrorAnswer(upstream: UpstreamResponse, json: unknown): GatewayResponse {
  const error = isObject(json) && isObject(json.error) ? json.error : null;
  const message = typeof error?.message === 'string' && error.message !== '' ? error.message : `The upstream answered ${upstream.status}.`;
  // `status` covers Google-style bodies ({error:{code, message, status}}), as Anthropic on Vertex may send.
  const type = typeof error?.type === 'string' ? error.type : typeof error?.status === 'string' ? error.status : errorTypeForStatus(upstream.status);
  return errorAnswer(upstream, { message, type }, upstream.status === 529 ? 503 : upstream.status);
}
