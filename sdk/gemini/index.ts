/**
 * Google's Gemini format (generateContent, streamGenerateContent,
 * batchEmbedContents), translated to and from the OpenAI shapes
 * (shared/providers/vertex.md): the `google` and `vertex-ai` providers both speak it.
 *
 * @packageDocumentation
 */
export { geminiChatAnswer, geminiErrorAnswer, isGoogleError, parseErrorBody, type GeminiAnswerOptions } from './answer.js';
export { batchEmbedAnswer, fromBatchEmbedResponse, toBatchEmbedRequest } from './embeddings.js';
export {
  audioPart,
  filePart,
  imagePart,
  inlineDataFrom,
  invalid,
  isObject,
  isStrict,
  mimeFromUrl,
  modelName,
  toGeminiSchema,
  type Json,
} from './parts.js';
export { geminiStreamTranslator, type GeminiStreamOptions } from './stream.js';
export {
  createdFrom,
  fromGeminiResponse,
  geminiFinish,
  geminiUsage,
  toGeminiRequest,
  toolCallId,
  type GeminiRequestOptions,
  type GeminiResponseOptions,
} from './translate.js';
export { checkResponseFormat, fromImagenResponse, IMAGEN_ASPECT_RATIOS, IMAGEN_DEFAULT_MODEL, imagenAnswer, imagenAspectRatio, imagenImagesRoute, imagenModel, toImagenRequest } from './images.js';
