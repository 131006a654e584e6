import type { GatewayResponse, ProviderRoute, RequestContext, Target, UpstreamResponse, Usage } from '../core/index.js';
import { GatewayError, passThrough, requestBody } from '../core/index.js';
import { toUsage, usageObjectOf } from './openai/usage.js';

/**
 * OpenAI's media APIs as the gateway serves them (docs/media.md): the routes the `media` plugin adds, by name, with
 * their paths under the base path and how their bodies come (JSON, or multipart with files). A provider serves one
 * by having an adapter under its name in `Provider.routes` (OpenAI's own shape: {@link openAIMediaRoute}).
 */
export const MEDIA_ROUTES = Object.freeze({
  'images.generations': { path: '/images/generations', multipart: false },
  'images.edits': { path: '/images/edits', multipart: true },
  'audio.speech': { path: '/audio/speech', multipart: false },
  'audio.transcriptions': { path: '/audio/transcriptions', multipart: true },
  'audio.translations': { path: '/audio/translations', multipart: true },
  moderations: { path: '/moderations', multipart: false },
} as const);

/** The name of a media route: `images.generations`, `audio.speech`, … */
export type MediaRouteName = keyof typeof MEDIA_ROUTES;

/** Every media route's name, in the order the API reference lists them. */
export const MEDIA_ROUTE_NAMES: readonly MediaRouteName[] = Object.freeze(Object.keys(MEDIA_ROUTES) as MediaRouteName[]);

/** Bytes of an answer's end kept to read its `usage` (it follows the images' base64, which may run to megabytes). */
const TAIL_BYTES = 16 * 1024;

/**
 * An adapter for a provider that speaks OpenAI's media API at `path` (default: the route's own, under its base URL):
 * the body goes as the client sent it (a JSON body with the target's `override_params` applied; a multipart body
 * byte for byte, with its own content type and boundary), and the answer comes back as the provider sent it,
 * streamed (speech, a streamed transcription), with its `usage` read from its end for the log and the price.
 */
export function openAIMediaRoute(name: MediaRouteName, path: ProviderRoute['path'] = MEDIA_ROUTES[name].path): ProviderRoute {
  const multipart = MEDIA_ROUTES[name].multipart;
  return {
    path,
    ...(multipart
      ? {
          headers: (ctx: RequestContext) => ({ 'content-type': ctx.header('content-type') ?? 'multipart/form-data' }),
          body: (ctx: RequestContext) => ctx.rawBody ?? Buffer.alloc(0),
        }
      : { body: (ctx: RequestContext, target: Target) => requestBody(ctx, target) ?? '' }),
    response: (upstream: UpstreamResponse, ctx: RequestContext) => withMediaUsage(passThrough(upstream), ctx, name),
  };
}

const NONE = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } as const;

/**
 * The usage of a media answer, for the log and the price: the tokens its answer reports (`gpt-image-*`,
 * `gpt-4o-transcribe`), else what the model is billed in: the images asked for, with their size and quality
 * (DALL·E), the seconds of audio its answer reports (`whisper-1`), the characters of text spoken (`tts-1`).
 */
export function withMediaUsage(answer: GatewayResponse, ctx: RequestContext, route: MediaRouteName): GatewayResponse {
  if (answer.status < 200 || answer.status >= 300) return answer;
  const body = ctx.body ?? {};
  if (route === 'audio.speech') {
    if (typeof body.input === 'string') ctx.usage ??= { ...NONE, characters: body.input.length };
    return answer;
  }
  const fallback = (tail: Record<string, unknown> | null): Usage | null => {
    if (route === 'images.generations' || route === 'images.edits') {
      const n = Number(body.n ?? 1);
      return { ...NONE, images: Number.isInteger(n) && n > 0 ? n : 1, image_size: typeof body.size === 'string' && body.size !== 'auto' ? body.size : '1024x1024', image_quality: typeof body.quality === 'string' ? body.quality : 'standard' };
    }
    if (tail?.type === 'duration' && typeof tail.seconds === 'number' && tail.seconds > 0) return { ...NONE, audio_seconds: tail.seconds };
    return null;
  };
  return withTailUsage(answer, ctx, fallback);
}

/**
 * Reads the usage of an answer passed through from its last bytes, as they go out: `ctx.usage` when the answer
 * ends (OpenAI puts `usage` last: after the images of an image answer, in the last event of a streamed
 * transcription). Without token counts, `fallback` gets the `usage` object found (or null) and says what else the
 * answer is billed in; an answer that is neither JSON nor events gets it at once.
 */
export function withTailUsage(answer: GatewayResponse, ctx: RequestContext, fallback: (usage: Record<string, unknown> | null) => Usage | null = () => null): GatewayResponse {
  if (answer.body === null || answer.status < 200 || answer.status >= 300) return answer;
  const type = String(answer.headers['content-type'] ?? '').toLowerCase();
  if (!type.includes('json') && !type.startsWith('text/event-stream')) {
    ctx.usage ??= fallback(null);
    return answer;
  }
  let tail: Buffer[] = [];
  let kept = 0;
  const observer = {
    onChunk(chunk: Buffer) {
      tail.push(chunk);
      kept += chunk.length;
      while (kept - tail[0]!.length >= TAIL_BYTES) kept -= tail.shift()!.length;
    },
    onEnd(error: Error | null) {
      if (error !== null || ctx.usage !== null) return;
      const found = usageObjectOf(Buffer.concat(tail, kept).toString('utf8'));
      tail = [];
      ctx.usage = toUsage(found) ?? fallback(found);
    },
  };
  answer.observers = answer.observers === null ? [observer] : [...answer.observers, observer];
  return answer;
}

const SIZE = /^(\d{1,5})x(\d{1,5})$/;

/**
 * OpenAI's image `size` (`WxH` in pixels) as width and height, for a provider that takes them apart; null when absent
 * or `auto`; anything else is a 400 naming `size`.
 */
export function parseImageSize(size: unknown, provider: string): { width: number; height: number } | null {
  if (size === undefined || size === null || size === 'auto') return null;
  const m = typeof size === 'string' ? SIZE.exec(size.trim()) : null;
  const width = m === null ? 0 : Number(m[1]);
  const height = m === null ? 0 : Number(m[2]);
  if (width === 0 || height === 0) throw new GatewayError('invalid_request', `size must be "auto" or WIDTHxHEIGHT in pixels, e.g. 1024x1024 (provider ${provider}).`, { param: 'size' });
  return { width, height };
}
