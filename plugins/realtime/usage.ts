import type { Usage } from '../../sdk/index.js';

type Json = Record<string, unknown>;
const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' ? (v as Json) : {});

/**
 * One `response.done`'s usage (the Realtime API's `{input_tokens, output_tokens, input_token_details: {text_tokens,
 * audio_tokens, image_tokens, cached_tokens, cached_tokens_details}, output_token_details}`) in the gateway's terms.
 * Cached tokens are priced at the cache rate whatever their kind, so the audio priced at the audio rate is the
 * audio that was not cached.
 */
export function realtimeUsage(raw: unknown): Usage | null {
  const u = obj(raw);
  if (u.input_tokens === undefined && u.output_tokens === undefined) return null;
  const input = obj(u.input_token_details);
  const cachedDetails = obj(input.cached_tokens_details);
  const output = obj(u.output_token_details);
  const prompt = n(u.input_tokens);
  const completion = n(u.output_tokens);
  const usage: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: n(u.total_tokens) || prompt + completion };
  const cached = n(input.cached_tokens);
  if (cached > 0) usage.cached_tokens = cached;
  const audioIn = Math.max(0, n(input.audio_tokens) - n(cachedDetails.audio_tokens));
  if (audioIn > 0) usage.input_audio_tokens = audioIn;
  const imageIn = Math.max(0, n(input.image_tokens) - n(cachedDetails.image_tokens));
  if (imageIn > 0) usage.input_image_tokens = imageIn;
  const audioOut = n(output.audio_tokens);
  if (audioOut > 0) usage.output_audio_tokens = audioOut;
  return usage;
}
