import type { FinishReason, MediaRouteName, OpenAIRouteName } from '../../../sdk/index.js';

/**
 * One OpenAI-compatible provider: where it lives, how it authenticates, and
 * what it does differently. Adding a provider of this kind is one row.
 * Facts from shared/providers/openai-compatible.md.
 */
export interface CompatibleProvider {
  name: string;
  /** Default base URL (the part before `/chat/completions`). `custom_host` replaces it. */
  baseURL: string;
  /** `bearer`: `Authorization: Bearer <key>`; `optional`: bearer only when a key is given (local servers). */
  auth: 'bearer' | 'optional';
  routes: readonly OpenAIRouteName[];
  /** Media routes it serves in OpenAI's own shape (docs/media.md): Groq's speech and transcription, Together's and xAI's image generation. */
  media?: readonly MediaRouteName[];
  quirks?: Quirks;
  /** Resource APIs it serves itself, by wire format (`Provider.resources`): Mistral's files (OpenAI's format) and fine-tuning jobs (its own). */
  resources?: { files?: string; batches?: string; fineTuning?: string };
  /**
   * `ask`: the provider takes `stream_options.include_usage`, so a chat or completions stream whose
   * client asked no usage is sent with it, and the usage the provider reports is recorded and kept
   * from the client (sdk/openai/stream-usage.ts). Absent: the request goes as the client sent it, and
   * a stream that carries no usage is counted (`tokens_estimated`). Set only for a provider known to
   * accept the field: one that refuses unknown fields would answer every such stream with a 400. The
   * plugin's `streamUsage` option sets it per provider.
   */
  streamUsage?: 'ask';
}

export interface Quirks {
  /** Provider finish reasons mapped to OpenAI's; any other unknown value becomes `stop`. */
  finishReasons?: Readonly<Record<string, FinishReason>>;
  /** Usage fields to fold into OpenAI's: DeepSeek's cache hits, Groq's `x_groq.usage`. */
  usage?: 'deepseek' | 'groq';
  /** Request fields the provider refuses with a 400: dropped before sending. */
  dropFields?: readonly string[];
  /** Only one choice per request: `n > 1` is a 400 naming the field and the provider. */
  singleChoice?: boolean;
  /** Tool-call ids must be 9 alphanumerics: ids from other providers are rewritten consistently. */
  nineCharToolIds?: boolean;
  /** Drop `name` on messages (the provider refuses it). */
  dropMessageNames?: boolean;
}

const CHAT_ONLY = ['chat.completions'] as const;
const CHAT_EMBED = ['chat.completions', 'embeddings'] as const;
const ALL = ['chat.completions', 'completions', 'embeddings'] as const;

/*
 * `streamUsage` is absent on every bundled row: shared/providers/openai-compatible.md confirms
 * `stream_options.include_usage` for none of them (it notes only that several send usage unasked:
 * Groq's `x_groq.usage`, Together's last chunk, Gemini's last content chunk), and a provider that
 * refuses the field would fail every stream (Groq and Cerebras answer some OpenAI fields with a
 * 400). Local servers (ollama, vllm, lmstudio) differ by version. A row is switched on with the
 * plugin's `streamUsage` option (`{ "deepseek": "ask" }`), or `streamUsage: 'ask'` on an `extra` row.
 */
const ROWS: CompatibleProvider[] = [
  {
    name: 'groq',
    baseURL: 'https://api.groq.com/openai/v1',
    auth: 'bearer',
    routes: CHAT_ONLY,
    media: ['audio.speech', 'audio.transcriptions', 'audio.translations'],
    quirks: { usage: 'groq', dropFields: ['logprobs', 'logit_bias', 'top_logprobs'], singleChoice: true, dropMessageNames: true },
  },
  { name: 'together-ai', baseURL: 'https://api.together.xyz/v1', auth: 'bearer', routes: ALL, media: ['images.generations'], quirks: { finishReasons: { eos: 'stop' } } },
  { name: 'fireworks-ai', baseURL: 'https://api.fireworks.ai/inference/v1', auth: 'bearer', routes: ALL },
  {
    name: 'mistral-ai',
    baseURL: 'https://api.mistral.ai/v1',
    auth: 'bearer',
    routes: CHAT_EMBED,
    quirks: { finishReasons: { model_length: 'length', error: 'stop' }, nineCharToolIds: true },
    resources: { files: 'openai', fineTuning: 'mistral' },
  },
  {
    name: 'deepseek',
    baseURL: 'https://api.deepseek.com',
    auth: 'bearer',
    routes: CHAT_ONLY,
    quirks: { usage: 'deepseek', finishReasons: { insufficient_system_resource: 'stop' } },
  },
  { name: 'openrouter', baseURL: 'https://openrouter.ai/api/v1', auth: 'bearer', routes: CHAT_ONLY, quirks: { finishReasons: { error: 'stop' } } },
  { name: 'perplexity-ai', baseURL: 'https://api.perplexity.ai', auth: 'bearer', routes: CHAT_ONLY },
  { name: 'x-ai', baseURL: 'https://api.x.ai/v1', auth: 'bearer', routes: ALL, media: ['images.generations'] },
  { name: 'cerebras', baseURL: 'https://api.cerebras.ai/v1', auth: 'bearer', routes: CHAT_ONLY },
  { name: 'ollama', baseURL: 'http://localhost:11434/v1', auth: 'optional', routes: ALL },
  { name: 'vllm', baseURL: 'http://localhost:8000/v1', auth: 'optional', routes: ALL },
  { name: 'lmstudio', baseURL: 'http://localhost:1234/v1', auth: 'optional', routes: ALL },
];

/** The bundled OpenAI-compatible providers. */
export const COMPATIBLE_PROVIDERS: readonly CompatibleProvider[] = Object.freeze(ROWS);
