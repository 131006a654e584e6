/**
 * The Responses API format (OpenAI's `POST /v1/responses`), translated to and
 * from chat completions so every chat provider can serve it: the request, the
 * response object, its event stream, and replays of stored objects. Pure
 * functions and a stream writer; nothing here reads a request context.
 *
 * @packageDocumentation
 */
export { inputItems, toChatRequest, type ChatRequestOptions } from './request.js';
export { finishStatus, fromChatCompletion, outputLogprobs, outputText, requestedSummary, responseShell, responsesUsage, type ResponseMeta } from './answer.js';
export { ResponseEventWriter, replayResponse } from './events.js';
export { chatToResponsesStream } from './stream.js';
export { GATEWAY_RESPONSE_ID_PREFIX, isGatewayResponseId, responseId, responseItemId } from './ids.js';
