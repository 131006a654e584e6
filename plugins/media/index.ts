import * as v from 'valibot';
import {
  GatewayError,
  invalidBody,
  MEDIA_ROUTE_NAMES,
  MEDIA_ROUTES,
  parseOptions,
  STAGES,
  type GatewayPlugin,
  type MediaRouteName,
  type RouteDoc,
} from '../../sdk/index.js';
import { readMultipart } from './multipart.js';

export const PLUGIN_NAME = 'media';

const OptionsSchema = v.strictObject({
  /** Bytes of a multipart upload (a file and its fields); OpenAI's own limit for audio is 25 MB, for an image edit 50 MB. */
  maxUploadBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024)), 50 * 1024 * 1024),
  /** Parts of a multipart upload (files and fields together). */
  maxParts: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 64),
  /** Bytes of one text field of a multipart upload (a prompt). */
  maxFieldBytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(64)), 64 * 1024),
});

export type MediaOptions = v.InferInput<typeof OptionsSchema>;

const text = (field: string) => v.pipe(v.string(`${field} must be a string`), v.minLength(1, `${field} must not be empty`));
/** The JSON bodies, loosely: the fields the gateway reads are checked, the rest goes to the provider as sent. */
const BODIES: Partial<Record<MediaRouteName, v.GenericSchema>> = {
  'images.generations': v.looseObject({ prompt: text('prompt'), model: v.optional(text('model')), n: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10))) }),
  'audio.speech': v.looseObject({ model: text('model'), input: text('input'), voice: v.optional(v.unknown()) }),
  moderations: v.looseObject({ input: v.union([v.string(), v.array(v.unknown())], 'input must be a string or an array'), model: v.optional(text('model')) }),
};
/** The fields a multipart route needs (its file parts are the provider's to check). */
const REQUIRED_FIELDS: Partial<Record<MediaRouteName, readonly string[]>> = {
  'images.edits': ['prompt'],
  'audio.transcriptions': ['model'],
  'audio.translations': ['model'],
};

const DOCS: Readonly<Record<MediaRouteName, Omit<RouteDoc, 'tags' | 'scope'>>> = {
  'images.generations': { summary: 'Create images', description: 'OpenAI\'s image generation, for the providers that generate images (docs/media.md).', body: BODIES['images.generations'], responseTypes: ['application/json'] },
  'images.edits': { summary: 'Edit images', description: 'OpenAI\'s image edits: multipart, one or more `image` files, `prompt`, an optional `mask` (docs/media.md).', bodyType: 'multipart/form-data', responseTypes: ['application/json'] },
  'audio.speech': { summary: 'Create speech', description: 'Text to speech; the audio is streamed back as the provider sends it (docs/media.md).', body: BODIES['audio.speech'], responseTypes: ['audio/mpeg', 'audio/wav', 'audio/opus', 'audio/aac', 'audio/flac', 'audio/pcm'] },
  'audio.transcriptions': { summary: 'Transcribe audio', description: 'Speech to text: multipart, `file` and `model`; `stream: true` answers server-sent events (docs/media.md).', bodyType: 'multipart/form-data', responseTypes: ['application/json', 'text/plain', 'text/event-stream'] },
  'audio.translations': { summary: 'Translate audio to English', description: 'Speech to English text: multipart, `file` and `model` (docs/media.md).', bodyType: 'multipart/form-data', responseTypes: ['application/json', 'text/plain'] },
  moderations: { summary: 'Classify text and images for harm', description: 'OpenAI\'s moderations (docs/media.md).', body: BODIES.moderations, responseTypes: ['application/json'] },
};

/**
 * Images, audio and moderations as routes of their own (docs/media.md): `POST /v1/images/generations`,
 * `/v1/images/edits`, `/v1/audio/speech`, `/v1/audio/transcriptions`, `/v1/audio/translations` and
 * `/v1/moderations`, served by every provider that has an adapter for them (OpenAI, Azure OpenAI and the
 * compatible providers that offer each), with the whole lifecycle of a request: routing, retries, fallbacks, limits,
 * the cache (images.generations and moderations), the log and the price. A provider without one answers 400 naming those that have it.
 * Multipart uploads are read within bounds (size, parts, field length) before any provider is called.
 */
export function media(options: MediaOptions = {}): GatewayPlugin {
  const opts = parseOptions(PLUGIN_NAME, OptionsSchema, options);
  return {
    name: PLUGIN_NAME,
    state: [],
    apply(api) {
      const base = api.options.basePath;
      const limits = { maxBytes: opts.maxUploadBytes, maxParts: opts.maxParts, maxFieldBytes: opts.maxFieldBytes };
      for (const name of MEDIA_ROUTE_NAMES) {
        const spec = MEDIA_ROUTES[name];
        api.routes.add({
          name,
          method: 'POST',
          path: base + spec.path,
          kind: 'provider',
          body: spec.multipart ? 'stream' : 'json',
          scope: 'completions.write',
          doc: { ...DOCS[name], tags: ['Media'], scope: 'completions.write' },
        });
      }
      const multipartRoutes = MEDIA_ROUTE_NAMES.filter((n) => MEDIA_ROUTES[n].multipart);
      // The upload is read first, before routing: a conditional route or a limit may read its fields (the model).
      api.hooks.resolveProvider.tapPromise({ name: PLUGIN_NAME, stage: STAGES.resolveProvider.ROUTE - 20, routes: multipartRoutes }, async (ctx) => {
        if (ctx.bodyStream !== null) await readMultipart(ctx, limits);
        for (const field of REQUIRED_FIELDS[ctx.route!.name as MediaRouteName] ?? []) {
          if (typeof ctx.body?.[field] !== 'string' || ctx.body[field] === '') throw new GatewayError('invalid_request', `The field "${field}" is required.`, { param: field });
        }
        return undefined;
      });
      for (const name of MEDIA_ROUTE_NAMES) {
        const schema = BODIES[name];
        if (schema === undefined) continue;
        const parse = v.safeParser(schema);
        api.hooks.beforeRequest.tap({ name: PLUGIN_NAME, stage: STAGES.beforeRequest.VALIDATE, routes: [name] }, (ctx) => {
          const result = parse(ctx.body);
          if (!result.success) throw invalidBody(result.issues);
          return undefined;
        });
      }
    },
  };
}

export default media;
