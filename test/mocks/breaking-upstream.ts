import type { ServerResponse } from 'node:http';
import { startRecordingServer } from '../../server/testing/mock-http.js';
import type { SeenNativeRequest } from '../../server/testing/provider-contract.js';

/**
 * A loopback upstream speaking OpenAI's chat completions and Responses API, Anthropic's Messages API and
 * Gemini's streamGenerateContent, whose streams break on request: the model names how (`reset`: the socket
 * is destroyed mid-body; `error`: the provider's own error event; `idle`: silence, the connection left open;
 * anything else: no break). A first call says {@link FIRST} ("The quick " "brown fox ") and breaks. A call
 * that carries that text back as the assistant's turn is a continuation and is answered whole: after a
 * prefilled assistant turn (no user message after it) with {@link PREFILL_REST}, after the gateway's
 * "continue" instruction with {@link INSTRUCT_REST}, which repeats the end of the first text as models do.
 */
export const FIRST = ['The quick ', 'brown fox '];
export const PREFILL_REST = [' jumps over', ' the lazy dog.'];
export const INSTRUCT_REST = ['brown fox jumps', ' over the lazy dog.'];
/** After an assistant prefix (Mistral's `prefix: true`): the answer starts with the prefix itself, as Mistral's does. */
export const PREFIX_REST = ['The quick brown fox jumps over', ' the lazy dog.'];
/** What the client reads, whichever way it was continued. */
export const WHOLE = 'The quick brown fox jumps over the lazy dog.';
/** The script of a model named `email-<kind>`: an e-mail address split by the break. */
export const EMAIL = { first: ['Write to ann.lee', '@exam'], prefill: ['ple.com now.'], instruct: ['@example.com now.'], whole: 'Write to ann.lee@example.com now.' };
const SCRIPTS = [{ first: FIRST, prefill: PREFILL_REST, prefix: PREFIX_REST, instruct: INSTRUCT_REST }, { ...EMAIL, prefix: ['Write to ann.lee@example.com now.'] }];
/** The usage every continuation reports. */
export const CONTINUATION_USAGE = { prompt: 30, completion: 7 };
/** Input tokens Anthropic's `message_start` reports for a first call. */
export const FIRST_ANTHROPIC_INPUT = 20;

type Json = Record<string, any>;
type Kind = 'reset' | 'error' | 'idle' | 'none';
type Continuation = 'prefill' | 'prefix' | 'instruct' | null;

/** Answers served: each answer's ids are its own. */
let served = 0;

const kindOf = (model: unknown): Kind => {
  const kind = String(model).replace(/^email-/, '');
  return kind === 'reset' || kind === 'error' || kind === 'idle' ? kind : 'none';
};
const scriptOf = (model: string) => (model.startsWith('email-') ? SCRIPTS[1]! : SCRIPTS[0]!);
const ev = (name: string | null, data: unknown) => `${name === null ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;

/** How a request asks to continue: the partial answer as the last turn (prefill) or followed by the instruction. */
function continuationOf(turns: Array<{ role: string; text: string; prefix?: boolean }>): Continuation {
  const i = turns.findIndex((t) => (t.role === 'assistant' || t.role === 'model') && SCRIPTS.some((s) => t.text.startsWith(s.first[0]!)));
  if (i === -1) return null;
  if (i !== turns.length - 1) return 'instruct';
  return turns[i]!.prefix === true ? 'prefix' : 'prefill';
}

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((c: any) => c?.text ?? '').join('') : '';

function turnsOf(path: string, body: Json): Array<{ role: string; text: string; prefix?: boolean }> {
  if (path.includes(':streamGenerateContent')) return (body.contents ?? []).map((c: any) => ({ role: c.role, text: (c.parts ?? []).map((p: any) => p.text ?? '').join('') }));
  if (path.startsWith('/v1/responses')) {
    const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []);
    return input.map((i: any) => ({ role: i.role, text: textOf(i.content) }));
  }
  return (body.messages ?? []).map((m: any) => ({ role: m.role, text: textOf(m.content), prefix: m.prefix }));
}

/** Sends `pieces` in the provider's stream format; `kind` says how the stream ends. */
function stream(res: ServerResponse, format: 'chat' | 'responses' | 'messages' | 'gemini', pieces: string[], kind: Kind, continuation: boolean, model: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const usage = continuation ? CONTINUATION_USAGE : null;
  const out: string[] = [];
  const id = `${continuation ? 'second' : 'first'}${++served}`;
  if (format === 'chat') {
    const chunk = (delta: Json, finish: string | null = null) => ev(null, { id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created: continuation ? 2 : 1, model, choices: [{ index: 0, delta, finish_reason: finish }] });
    out.push(chunk({ role: 'assistant', content: '' }));
    for (const p of pieces) out.push(chunk({ content: p }));
    if (kind === 'error') out.push(ev(null, { error: { message: 'The server is overloaded.', type: 'server_error', code: null } }), 'data: [DONE]\n\n');
    if (kind === 'none') {
      out.push(chunk({}, 'stop'));
      if (usage) out.push(ev(null, { id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created: 2, model, choices: [], usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } }));
      out.push('data: [DONE]\n\n');
    }
  } else if (format === 'messages') {
    out.push(ev('message_start', { type: 'message_start', message: { id: `msg_${id}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: continuation ? usage!.prompt : FIRST_ANTHROPIC_INPUT, output_tokens: 1 } } }));
    out.push(ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    for (const p of pieces) out.push(ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } }));
    if (kind === 'error') out.push(ev('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    if (kind === 'none') {
      out.push(ev('content_block_stop', { type: 'content_block_stop', index: 0 }));
      out.push(ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage?.completion ?? 5 } }));
      out.push(ev('message_stop', { type: 'message_stop' }));
    }
  } else if (format === 'responses') {
    let seq = 0;
    const r = (name: string, data: Json) => ev(name, { type: name, sequence_number: seq++, ...data });
    const response = { id: `resp_${id}`, object: 'response', created_at: continuation ? 2 : 1, status: 'in_progress', model, output: [] as Json[], usage: null as Json | null };
    const itemId = `msg_${id}`;
    out.push(r('response.created', { response }), r('response.in_progress', { response }));
    out.push(r('response.output_item.added', { output_index: 0, item: { id: itemId, type: 'message', role: 'assistant', status: 'in_progress', content: [] } }));
    out.push(r('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
    for (const p of pieces) out.push(r('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: p, logprobs: [] }));
    if (kind === 'error') out.push(r('error', { code: 'server_error', message: 'The server is overloaded.', param: null }));
    if (kind === 'none') {
      const text = pieces.join('');
      const part = { type: 'output_text', text, annotations: [] };
      const item = { id: itemId, type: 'message', role: 'assistant', status: 'completed', content: [part] };
      out.push(r('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] }));
      out.push(r('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part }));
      out.push(r('response.output_item.done', { output_index: 0, item }));
      const u = usage ?? { prompt: 10, completion: 5 };
      out.push(r('response.completed', { response: { ...response, status: 'completed', output: [item], usage: { input_tokens: u.prompt, input_tokens_details: { cached_tokens: 0 }, output_tokens: u.completion, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.prompt + u.completion } } }));
    }
  } else {
    const chunk = (text: string, finish?: string) => ev(null, { candidates: [{ content: { role: 'model', parts: [{ text }] }, ...(finish ? { finishReason: finish } : {}), index: 0 }], modelVersion: model });
    for (const p of pieces) out.push(chunk(p));
    if (kind === 'error') out.push(ev(null, { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }));
    if (kind === 'none') {
      const u = usage ?? { prompt: 10, completion: 5 };
      out.push(ev(null, { candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: u.prompt, candidatesTokenCount: u.completion, totalTokenCount: u.prompt + u.completion }, modelVersion: model }));
    }
  }
  // Each event its own write, a few ms apart, as a real upstream flushes them.
  let i = 0;
  const step = () => {
    if (res.destroyed) return;
    if (i < out.length) {
      res.write(out[i++]);
      setTimeout(step, 2);
      return;
    }
    if (kind === 'reset') setTimeout(() => res.socket?.destroy(), 20);
    else if (kind === 'idle') return; // left open: the gateway's idle timeout must notice
    else res.end();
  };
  step();
}

/** A tool call whose arguments break off: the connection is reset mid-arguments (chat and Messages formats). */
function toolThenReset(res: ServerResponse, format: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (format === 'messages') {
    res.write(ev('message_start', { type: 'message_start', message: { id: 'msg_tool', type: 'message', role: 'assistant', model: 'tool-reset', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } } }));
    res.write(ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } }));
    res.write(ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city": "Par' } }));
  } else {
    const chunk = (delta: Json) => ev(null, { id: 'chatcmpl-tool', object: 'chat.completion.chunk', created: 1, model: 'tool-reset', choices: [{ index: 0, delta, finish_reason: null }] });
    res.write(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }));
    res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Par' } }] }));
  }
  setTimeout(() => res.socket?.destroy(), 30);
}

export async function startBreakingUpstream() {
  const server = await startRecordingServer((req, res, seen: SeenNativeRequest) => {
    const path = req.url ?? '';
    const body = (seen.body ?? {}) as Json;
    const format = path.includes(':streamGenerateContent') ? 'gemini' : path.startsWith('/v1/responses') ? 'responses' : path.startsWith('/v1/messages') ? 'messages' : 'chat';
    const model = format === 'gemini' ? decodeURIComponent(path.split('/models/')[1]!.split(':')[0]!) : String(body.model);
    if (model === 'tool-reset') return toolThenReset(res, format);
    const turns = turnsOf(path, body);
    const continuation = continuationOf(turns);
    const script = turns.some((t) => t.text.startsWith(EMAIL.first[0]!)) ? SCRIPTS[1]! : scriptOf(model);
    if (continuation === null) return stream(res, format, script.first, kindOf(model), false, model);
    stream(res, format, script[continuation], 'none', true, model);
  });
  return Object.assign(server, {
    /** The requests that continued a stream, with how they asked. */
    continuations: () => server.requests.filter((r) => continuationOf(turnsOf(r.path, (r.body ?? {}) as Json)) !== null),
  });
}
