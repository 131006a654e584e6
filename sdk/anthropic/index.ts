/**
 * Anthropic's Messages API, translated to and from the OpenAI chat format
 * (shared/providers/anthropic.md): the `anthropic` provider and Claude on
 * Vertex AI both speak it; and the other way, the Messages front door served
 * by chat providers (requests to chat, chat answers and streams to messages).
 * Pure functions and a stream writer: nothing here reads a target.
 *
 * @packageDocumentation
 */
export { anthropicErrorAnswer, fromAnthropicMessage } from './translate.js';
export { platformBetas, toAnthropicRequest, type AnthropicRequestOptions } from './request.js';
export { anthropicStreamTranslator, type AnthropicStreamOptions } from './stream.js';
export { finishReason, mergeCounts, usageFromCounts, type AnthropicCounts } from './usage.js';
export { messagesToChat, type MessagesToChatOptions } from './from-messages.js';
export { anthropicErrorBody, chatToMessage, errorTypeForStatus, messageId, messagesStatus, messagesUsage, parseInput, stopReason } from './to-message.js';
export { assembleMessage, chatToMessagesStream, MessageEventWriter, replayMessage } from './message-events.js';
export { anthropicUsageObserver } from './observe.js';
