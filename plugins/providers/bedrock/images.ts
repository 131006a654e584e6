import { effectiveBody, errorAnswer, GatewayError, parseImageSize, type GatewayResponse, jsonAnswer, type ProviderRoute, readErrorJson, readJson, type RequestContext, type Target, type UpstreamResponse } from '../../../sdk/index.js';
import { bedrockErrorAnswer } from './answer.js';
import { isObject } from './converse.js';

type Json = Record<string, unknown>;

/**
 * OpenAI's image generation (`images.generations`, docs/media.md) on Bedrock through InvokeModel
 * (`POST /model/{modelId}/invoke`, signed as every Bedrock call) for Amazon Nova Canvas
 * (`amazon.nova-canvas-*`) and Titan Image Generator (`amazon.titan-image-generator-*`), which take the same body:
 * `{taskType: "TEXT_IMAGE", textToImageParams: {text}, imageGenerationConfig: {numberOfImages, width, height,
 * quality?, cfgScale?}}`, answered `{images: [<base64>], error?}`, which becomes `{created, data: [{b64_json}]}`.
 *
 * - `model` is required (as for Bedrock's other routes), and must be one of those two families (a 400 naming it
 *   otherwise: Stability's models on Bedrock take another body); cross-region prefixes and ARNs naming them pass;
 * - `n` → `numberOfImages` (1 when absent); `size` (`WxH`) → `width` and `height`, 1024x1024 when absent or `auto`;
 * - `quality` `hd` or `high` → `premium`, any other → `standard`, none sends none (the model's default, standard);
 * - `cfg_scale` (not OpenAI's; a number) → `cfgScale`;
 * - `response_format` other than `b64_json` is a 400 naming it: the gateway returns bytes, never a URL;
 * - an answer with no image and an `error` (the content filters) is a 400 `content_policy_violation`;
 * - an error is Bedrock's exception mapped to the gateway envelope, with its status (as for the other routes).
 */

const DEFAULT_SIZE = { width: 1024, height: 1024 } as const;

/** Whether a model id names a model that takes the TEXT_IMAGE body (Nova Canvas, Titan Image Generator), with any region prefix or as an ARN. */
export function isTextImageModel(model: string): boolean {
  return TEXT_IMAGE_MODEL.test(model);
}
const TEXT_IMAGE_MODEL = /(^|[./])amazon\.(nova-canvas|titan-image-generator)-/;

/** OpenAI's `size` as width and height: 1024x1024 when absent or `auto`; anything but `WxH` is a 400 naming `size`. */
export function imageDimensions(size: unknown, provider: string): { width: number; height: number } {
  return parseImageSize(size, provider) ?? { ...DEFAULT_SIZE };
}

/** OpenAI's `quality` → Nova Canvas / Titan's: `hd` and `high` are `premium`, the rest `standard`; undefined when absent. */
export function imageQuality(quality: unknown): 'standard' | 'premium' | undefined {
  if (quality === undefined || quality === null) return undefined;
  return quality === 'hd' || quality === 'high' ? 'premium' : 'standard';
}

/** OpenAI's image generation body → the InvokeModel body of Nova Canvas and Titan Image Generator. */
export function toInvokeImage(body: Json, model: string, provider: string): Json {
  if (!isTextImageModel(model)) {
    throw new GatewayError('invalid_request', `Provider "${provider}" generates images with amazon.nova-canvas-* and amazon.titan-image-generator-* models only (got "${model}").`, { param: 'model' });
  }
  const format = body.response_format;
  if (format !== undefined && format !== null && format !== 'b64_json') {
    throw new GatewayError('invalid_request', `Provider "${provider}": response_format ${JSON.stringify(format)} is not supported: images come back as b64_json only.`, { param: 'response_format' });
  }
  if (typeof body.prompt !== 'string' || body.prompt === '') throw new GatewayError('invalid_request', `Provider "${provider}": 'prompt' is required.`, { param: 'prompt' });
  const config: Json = { numberOfImages: typeof body.n === 'number' ? body.n : 1, ...imageDimensions(body.size, provider) };
  const quality = imageQuality(body.quality);
  if (quality !== undefined) config.quality = quality;
  if (typeof body.cfg_scale === 'number') config.cfgScale = body.cfg_scale;
  return { taskType: 'TEXT_IMAGE', textToImageParams: { text: body.prompt }, imageGenerationConfig: config };
}

/** The answer to InvokeModel for an image model in OpenAI's shape (no usage: Bedrock reports none for images). */
export async function invokeImageAnswer(upstream: UpstreamResponse, provider: string): Promise<GatewayResponse> {
  if (upstream.status < 200 || upstream.status >= 300) return bedrockErrorAnswer(upstream, await readErrorJson(upstream));
  const json = await readJson(upstream);
  const images = isObject(json) && Array.isArray(json.images) ? json.images.filter((i): i is string => typeof i === 'string' && i !== '') : [];
  if (images.length === 0) {
    const reason = isObject(json) && typeof json.error === 'string' && json.error !== '' ? json.error : null;
    if (reason === null) throw new GatewayError('upstream_invalid_response', `The provider ${provider} answered without images.`);
    return errorAnswer(upstream, { message: `The provider ${provider} generated no image: ${reason}`, type: 'invalid_request_error', code: 'content_policy_violation' }, 400);
  }
  return jsonAnswer(upstream, upstream.status, { created: Math.floor(Date.now() / 1000), data: images.map((b64_json) => ({ b64_json })) });
}

const bodyOf = (ctx: RequestContext, target: Target): Json => {
  const body = effectiveBody(ctx, target);
  if (body === null) throw new GatewayError('invalid_request', 'The request needs a JSON body.');
  return body;
};

const modelOf = (body: Json): string => {
  const model = body.model;
  if (typeof model !== 'string' || model === '') throw new GatewayError('invalid_request', "'model' is required: a Bedrock model id, inference profile id or ARN (e.g. amazon.nova-canvas-v1:0).", { param: 'model' });
  return model;
};

/**
 * The `images.generations` adapter of Bedrock: InvokeModel at `modelPath(model, 'invoke')` (the provider's own
 * `/model/{modelId}/…` builder, passed in so this file does not import the plugin's entry).
 */
export function invokeImagesRoute(provider: string, modelPath: (model: string, operation: string) => string): ProviderRoute {
  return {
    path: (ctx, target) => modelPath(modelOf(bodyOf(ctx, target)), 'invoke'),
    headers: () => ({ accept: 'application/json' }),
    body: (ctx, target) => {
      const body = bodyOf(ctx, target);
      return JSON.stringify(toInvokeImage(body, modelOf(body), provider));
    },
    response: (upstream) => invokeImageAnswer(upstream, provider),
  };
}
