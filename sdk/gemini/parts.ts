import { GatewayError } from '../../core/index.js';
import { isObject } from '../json-object.js';

/**
 * Building blocks of the OpenAI → Gemini request mapping: media parts from
 * OpenAI content parts, and JSON Schema reduced to Gemini's OpenAPI-subset
 * `Schema` (used for tool parameters and `responseSchema`).
 */

export type Json = Record<string, unknown>;

/** A 400 naming the field and the provider, for a request the provider cannot be sent. */
export function invalid(provider: string, param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${message} (provider ${provider}).`, { param });
}

export { isObject };

/** A model name fit for a URL path segment (`models/` prefix dropped); anything else is a 400. */
export function modelName(body: Json | null, provider: string): string {
  const model = body?.model;
  if (typeof model !== 'string' || model === '') throw invalid(provider, 'model', 'model is required');
  const name = model.startsWith('models/') ? model.slice(7) : model;
  if (!/^[A-Za-z0-9._@-]+$/.test(name)) throw invalid(provider, 'model', 'model may hold only letters, digits and . _ @ -');
  return name;
}

/** `strict_reference_compliance`, which defaults to true: provider extensions are refused or dropped. */
export function isStrict(target: Record<string, unknown>): boolean {
  return target.strict_reference_compliance !== false;
}

const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*),/;

/** Parses a base64 data URL into Gemini `inlineData`; null when `url` is not a data URL. */
export function inlineDataFrom(url: string, provider: string, param: string): Json | null {
  if (!url.startsWith('data:')) return null;
  const m = DATA_URL.exec(url);
  if (m === null || !m[2]!.split(';').includes('base64')) throw invalid(provider, param, 'Only base64 data URLs (data:<mime>;base64,<data>) can be sent');
  return { inlineData: { mimeType: m[1]!.toLowerCase(), data: url.slice(m[0].length) } };
}

/** MIME types Gemini needs for `fileData`, guessed from a URL's extension. */
const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  txt: 'text/plain',
  mp3: 'audio/mp3',
  wav: 'audio/wav',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  mov: 'video/mov',
  webm: 'video/webm',
};

/** The MIME type of a file URL from its extension (query and fragment ignored), or `fallback`. */
export function mimeFromUrl(url: string, fallback: string): string {
  const path = url.replace(/[?#].*$/, '');
  const dot = path.lastIndexOf('.');
  if (dot === -1 || dot < path.lastIndexOf('/')) return fallback;
  return MIME_BY_EXTENSION[path.slice(dot + 1).toLowerCase()] ?? fallback;
}

/**
 * An OpenAI `image_url` part as a Gemini part: a base64 data URL becomes
 * `inlineData`; an http(s) or gs:// URL becomes `fileData` with the MIME type
 * guessed from the extension (`image/jpeg` when there is none).
 */
export function imagePart(part: Json, provider: string, param: string): Json {
  const image = part.image_url;
  const url = typeof image === 'string' ? image : isObject(image) && typeof image.url === 'string' ? image.url : undefined;
  if (url === undefined) throw invalid(provider, `${param}.image_url.url`, 'An image_url part needs a url');
  const inline = inlineDataFrom(url, provider, `${param}.image_url.url`);
  if (inline !== null) return inline;
  if (/^(https?|gs):\/\//i.test(url)) return { fileData: { mimeType: mimeFromUrl(url, 'image/jpeg'), fileUri: url } };
  throw invalid(provider, `${param}.image_url.url`, 'An image URL must be a base64 data URL or an http(s):// or gs:// URL');
}

/** An OpenAI `input_audio` part (`{data, format}`) as `inlineData` with `audio/<format>`. */
export function audioPart(part: Json, provider: string, param: string): Json {
  const audio = part.input_audio;
  if (!isObject(audio) || typeof audio.data !== 'string' || typeof audio.format !== 'string') {
    throw invalid(provider, `${param}.input_audio`, 'An input_audio part needs data and format');
  }
  return { inlineData: { mimeType: `audio/${audio.format}`, data: audio.data } };
}

/** An OpenAI `file` part: `file_data` (a data URL) as `inlineData`, a URL `file_id` as `fileData`. */
export function filePart(part: Json, provider: string, param: string): Json {
  const file = isObject(part.file) ? part.file : {};
  if (typeof file.file_data === 'string') {
    const inline = inlineDataFrom(file.file_data, provider, `${param}.file.file_data`);
    if (inline !== null) return inline;
  }
  if (typeof file.file_id === 'string' && /^(https?|gs):\/\//i.test(file.file_id)) {
    const name = typeof file.filename === 'string' ? file.filename : file.file_id;
    return { fileData: { mimeType: mimeFromUrl(name, 'application/pdf'), fileUri: file.file_id } };
  }
  throw invalid(provider, `${param}.file`, 'A file part needs file_data as a base64 data URL or file_id as an http(s):// or gs:// URL');
}

/** Keys of Gemini's `Schema` object; every other JSON Schema keyword is dropped. */
const SCHEMA_KEYS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'minProperties',
  'maxProperties',
  'required',
  'default',
  'example',
  'propertyOrdering',
]);

/** Deepest `$ref` inlining followed; deeper (recursive) references are dropped. */
const MAX_REF_DEPTH = 8;

/**
 * Reduces a JSON Schema to Gemini's `Schema`: unsupported keywords
 * (`additionalProperties`, `$schema`, `strict`, …) are removed, local `$ref`s
 * into `$defs`/`definitions` are inlined, `type: [T, "null"]` becomes
 * `type: T, nullable: true`, `oneOf` becomes `anyOf`, `const` becomes `enum`.
 */
export function toGeminiSchema(schema: unknown, defs?: Json, depth = 0): Json {
  if (!isObject(schema)) return {};
  const root = defs ?? { ...(isObject(schema.$defs) ? schema.$defs : {}), ...(isObject(schema.definitions) ? schema.definitions : {}) };
  if (typeof schema.$ref === 'string') {
    const name = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(schema.$ref)?.[1];
    const target = name === undefined ? undefined : root[name];
    if (target === undefined || depth >= MAX_REF_DEPTH) return {};
    const { $ref: _ref, ...rest } = schema;
    return toGeminiSchema({ ...(target as Json), ...rest }, root, depth + 1);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_KEYS.has(key)) out[key] = value;
  }
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    if (types.length !== schema.type.length) out.nullable = true;
    if (types.length === 1) out.type = types[0];
    else {
      delete out.type;
      if (types.length > 1) out.anyOf = types.map((t) => ({ type: t }));
    }
  }
  if (schema.const !== undefined && out.enum === undefined) out.enum = [schema.const];
  if (isObject(schema.properties)) {
    const props: Json = {};
    for (const [name, value] of Object.entries(schema.properties)) props[name] = toGeminiSchema(value, root, depth);
    out.properties = props;
  }
  if (schema.items !== undefined && !Array.isArray(schema.items)) out.items = toGeminiSchema(schema.items, root, depth);
  const variants = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (variants !== null) {
    const nonNull = variants.filter((s) => !(isObject(s) && s.type === 'null'));
    if (nonNull.length !== variants.length) out.nullable = true;
    out.anyOf = nonNull.map((s) => toGeminiSchema(s, root, depth));
  }
  return out;
}
