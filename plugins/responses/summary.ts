import { StringDecoder } from 'node:string_decoder';
import { isObject, mapChunks, toSource, type BodySource, type GatewayResponse, readResponseBody, type Target } from '../../sdk/index.js';
import { isStrict } from '../../sdk/gemini/index.js';

/**
 * `reasoning.summary` and its older name `generate_summary` (the spec's
 * response object shows the latter) on the paths where the door does not
 * build the response object itself: the translation's one setting a chat
 * adapter has, and the echo on a native provider's answer.
 */

type Json = Record<string, unknown>;

/**
 * Whether a leaf's chat adapter has a summary setting: Gemini's (`google`, and
 * `vertex-ai` but for its Claude models, which go to Anthropic's publisher) returns
 * its thought summaries with `includeThoughts`, which the chat extension
 * `thinking: {type: "enabled"}` sets; only for a target with
 * `strict_reference_compliance: false` (a strict one refuses the extension and
 * drops thoughts). No other chat API has a setting that asks for a summary alone.
 */
function summarisesThoughts(target: Target, model: string): boolean {
  if (isStrict(target)) return false;
  return target.provider === 'google' || (target.provider === 'vertex-ai' && !model.toLowerCase().startsWith('claude'));
}

/** Adds to a translated chat body what the asked summary maps to on this leaf (see {@link summarisesThoughts}). */
export function summaryToChat(chat: Json, target: Target, summary: string | null): Json {
  if (summary === null || chat.thinking !== undefined || !summarisesThoughts(target, typeof chat.model === 'string' ? chat.model : '')) return chat;
  return { ...chat, thinking: { type: 'enabled' } };
}

/**
 * Puts the asked summary on a response object as `reasoning.generate_summary`
 * when the provider's object has no such field (OpenAI's current objects show
 * `summary` only). What the provider says (`effort`, `summary`) is kept.
 */
export function echoSummary(response: Json, summary: string): boolean {
  const reasoning = isObject(response.reasoning) ? response.reasoning : null;
  if (reasoning !== null && reasoning.generate_summary !== undefined) return false;
  response.reasoning = { ...(reasoning ?? { effort: null, summary: null }), generate_summary: summary };
  return true;
}

/**
 * A native answer with the asked summary echoed in its response object: a JSON
 * answer read whole, patched and sent again; a stream patched line by line as it
 * flows (each `data:` line of an event carrying the whole object: created,
 * in_progress, completed, …), every other byte as it came. Only requests that
 * ask for a summary pay for it.
 */
export async function withSummaryEcho(response: GatewayResponse, summary: string, sse: boolean): Promise<GatewayResponse> {
  if (sse) {
    response.body = patchEvents(toSource(response.body), summary);
    delete response.headers['content-length'];
    return response;
  }
  const bytes = await readResponseBody(response.body);
  let object: unknown;
  try {
    object = JSON.parse(bytes.toString('utf8'));
  } catch {
    response.body = bytes;
    return response;
  }
  if (!isObject(object) || object.object !== 'response' || !echoSummary(object, summary)) {
    response.body = bytes;
    return response;
  }
  delete response.headers['content-length'];
  response.body = JSON.stringify(object);
  return response;
}

/** The prefix of an SSE data line holding an object with a whole response (`{"type":"response.…","response":{…}}`). */
const SNAPSHOT = /^data: ?\{.*"response":\{/;

function patchLine(line: string, summary: string): string {
  if (!SNAPSHOT.test(line)) return line;
  const start = line.indexOf('{');
  let data: unknown;
  try {
    data = JSON.parse(line.slice(start));
  } catch {
    return line;
  }
  if (!isObject(data) || !isObject(data.response) || !echoSummary(data.response, summary)) return line;
  return `data: ${JSON.stringify(data)}`;
}

function patchLines(text: string, summary: string): string {
  return text.includes('"response":{') ? text.split('\n').map((line) => patchLine(line, summary)).join('\n') : text;
}

/** The stream with its snapshot events patched; an upstream error still reaches the writer (which ends the client's stream). */
function patchEvents(source: BodySource, summary: string): BodySource {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  return mapChunks(source, {
    push(chunk) {
      const text = rest + decoder.write(chunk);
      const cut = text.lastIndexOf('\n');
      if (cut === -1) {
        rest = text;
        return '';
      }
      rest = text.slice(cut + 1);
      return patchLines(text.slice(0, cut + 1), summary);
    },
    end() {
      const last = rest + decoder.end();
      return last === '' ? '' : patchLines(last, summary);
    },
  });
}
