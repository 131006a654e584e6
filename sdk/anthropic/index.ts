/**
 * Anthropic's Messages API, translated to and from the OpenAI chat format
 * (shared/providers/anthropic.md): the `anthropic` provider and Claude on
 * Vertex AI both speak it. Pure functions: nothing here reads a target.
 */
export { anthropicErrorAnswer, fromAnthropicMessage } from './translate.js';
export { toAnthropicRequest, type AnthropicRequestOptions } from './request.js';
export { anthropicStreamTranslator, type AnthropicStreamOptions } from './stream.js';
export { finishReason, mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';
