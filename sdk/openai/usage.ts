import type { BodyObserver, RequestContext, Usage } from '../../core/index.js';
import { lineObserver, wholeBodyObserver } from '../whole-body.js';

/** Larger non-stream bodies are not scanned for usage; the answer still goes out untouched. */
const MAX_SCANNED_BYTES = 8 * 1024 * 1024;

/**
 * Maps an OpenAI `usage` object to the gateway's Usage, or null when it is not
 * one: chat's (`prompt_tokens`, …) or the Responses API's (`input_tokens`,
 * `output_tokens`, with cached tokens counted in the input, as OpenAI does).
 */
export function toUsage(value: unknown): Usage | null {
  if (value === null || typeof value !== 'object') return null;
  const u = value as Record<string, unknown>;
  const prompt = num(u.prompt_tokens) ?? num(u.input_tokens);
  const completion = num(u.completion_tokens) ?? num(u.output_tokens);
  const total = num(u.total_tokens) ?? (prompt ?? 0) + (completion ?? 0);
  if (prompt === undefined && completion === undefined && num(u.total_tokens) === undefined) return null;
  const usage: Usage = { prompt_tokens: prompt ?? 0, completion_tokens: completion ?? 0, total_tokens: total };
  // `input_token_details` (singular): the audio APIs' and the Realtime API's name for it.
  const details = (u.prompt_tokens_details ?? u.input_tokens_details ?? u.input_token_details) as Record<string, unknown> | undefined;
  const out = (u.completion_tokens_details ?? u.output_tokens_details) as Record<string, unknown> | undefined;
  const cached = num(details?.cached_tokens);
  const reasoning = num(out?.reasoning_tokens);
  if (cached !== undefined) usage.cached_tokens = cached;
  if (reasoning !== undefined) usage.reasoning_tokens = reasoning;
  // What OpenAI's newer answers and the gateway's own translations report beside them (each billed at its own rate).
  const written = num(details?.cache_write_tokens);
  const audioIn = num(details?.audio_tokens);
  const imageIn = num(details?.image_tokens);
  const audioOut = num(out?.audio_tokens);
  if (written !== undefined) usage.cache_write_tokens = written;
  if (audioIn !== undefined && audioIn > 0) usage.input_audio_tokens = audioIn;
  if (imageIn !== undefined && imageIn > 0) usage.input_image_tokens = imageIn;
  if (audioOut !== undefined && audioOut > 0) usage.output_audio_tokens = audioOut;
  return usage;
}

/** Kinds of token a usage may count apart, summed field by field by {@link addUsage}. */
const TOKEN_KINDS = ['cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens', 'input_audio_tokens', 'input_image_tokens', 'output_audio_tokens'] as const;

/** `a` plus `b`, field by field: the usage of several calls (a continued stream, a realtime session's responses). */
export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = { prompt_tokens: a.prompt_tokens + b.prompt_tokens, completion_tokens: a.completion_tokens + b.completion_tokens, total_tokens: a.total_tokens + b.total_tokens };
  for (const k of TOKEN_KINDS) {
    if (a[k] !== undefined || b[k] !== undefined) out[k] = (a[k] ?? 0) + (b[k] ?? 0);
  }
  return out;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * Finds the JSON object that follows the last `"usage":` key in `text` and
 * parses only that object, so a large answer is not parsed whole.
 */
export function extractUsage(text: string): Usage | null {
  return toUsage(usageObjectOf(text));
}

/** The JSON object that follows the last `"usage":` key in `text`, parsed alone; null when there is none. */
export function usageObjectOf(text: string): Record<string, unknown> | null {
  const key = text.lastIndexOf('"usage"');
  if (key === -1) return null;
  const open = text.indexOf('{', key + 7);
  if (open === -1) return null;
  // Only whitespace and a colon may stand between the key and the object (else it is `"usage":null`).
  if (text.slice(key + 7, open).trim() !== ':') return null;
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */) depth++;
    else if (c === 125 /* } */ && --depth === 0) {
      try {
        return JSON.parse(text.slice(open, i + 1)) as Record<string, unknown>;
      } catch {
        return null;
      }
    }
  }
  return null;
}

/** Reads `usage` from a non-stream JSON answer once it has been sent. */
export function jsonUsageObserver(ctx: RequestContext): BodyObserver {
  return wholeBodyObserver(MAX_SCANNED_BYTES, (body) => {
    // Usage sits near the end of the answer: decode only from its key on.
    const key = body.lastIndexOf('"usage"');
    if (key !== -1) ctx.usage = extractUsage(body.toString('utf8', key));
  });
}

/**
 * Reads `usage` from an OpenAI SSE stream as it passes: only `data:` lines
 * that carry a usage object are parsed; every other chunk is a substring test.
 */
export function sseUsageObserver(ctx: RequestContext): BodyObserver {
  return lineObserver(MAX_SCANNED_BYTES, (line) => {
    if (line.startsWith('data:') && line.includes('"usage":{')) {
      const usage = extractUsage(line);
      if (usage !== null) ctx.usage = usage;
    }
  });
}
