import type { Usage } from '../../core/index.js';
import { isObject } from '../json-object.js';
import type { SSEEvent } from '../sse.js';
import { serializeEvent } from '../stream-control/doors.js';

type Json = Record<string, unknown>;

/*
 * Where two upstream streams are joined into one client stream (stream recovery, docs/formats.md "Streams
 * that survive a provider failure"). A seam reads a front door's events as they go to the client: the
 * first call's, then each continuation's. It knows which events carry answer text, which one breaks a
 * stream (an error event) and which closes it, whether the answer so far can be continued honestly, and
 * how to make a continuation's events look like the rest of the first stream: its opening events dropped,
 * its ids, indexes and sequence numbers the first stream's, its usage the sum of every call.
 */

/** What to do with one event. */
export type SeamAction = 'emit' | 'drop' | 'break' | 'end';

/** One event, read. */
export interface SeamItem {
  /** `emit` it, `drop` it (a continuation's opening), `break` (an error event: the stream failed), `end` (the closing event: emitted, then done). */
  action: SeamAction;
  /** The answer text the event adds ('' for none); the recovery may trim its start at a seam before rendering. */
  text: string;
  /** The event as the client gets it, with `text` as its text; the text is then counted as sent. */
  render(text: string): string;
}

/** One client stream's seam (one per request). */
export interface DoorSeam {
  /** The answer text the client got, every call's joined. */
  readonly sent: string;
  /** Why the stream cannot be continued (`tool_call`, `reasoning`, `several_choices`, `non_text`), or null when it can. */
  readonly refusal: string | null;
  /** The answer itself is complete (its finish came): only the closing events are missing. */
  readonly finished: boolean;
  /** The model the stream named first, null until one did. */
  readonly model: string | null;
  /** The model the call in progress named (its first chunk, `message_start` or `response.created`), null until it did. */
  readonly segmentModel: string | null;
  /** What follows an error event passed on as the stream's end (chat: `data: [DONE]`), '' for nothing. */
  tail(): string;
  /** Reads one event of the call in progress. */
  read(event: SSEEvent): SeamItem;
  /** The closing events of a stream whose answer finished but whose closing events were lost. */
  closing(): string;
  /**
   * A continuation starts: from now on its opening events are dropped, its ids and indexes become the
   * stream's, and `prior` (the usage of the calls before it) is added to the usage its events report.
   */
  next(prior: Usage): void;
}

/**
 * Why an answer with this kind of part cannot be continued: `tool_call` (a call's arguments cannot be resumed
 * honestly), `reasoning` (thinking a continuation would redo), `non_text` (anything else but text).
 */
export function refusalOf(type: unknown): string {
  const t = String(type);
  if (t === 'tool_use' || t === 'server_tool_use' || t === 'mcp_tool_use' || t === 'function_call' || t.endsWith('_call') || t.includes('function_call')) return 'tool_call';
  if (t.startsWith('thinking') || t === 'redacted_thinking' || t.startsWith('signature') || t.includes('reasoning')) return 'reasoning';
  return 'non_text';
}

const drop: SeamItem = { action: 'drop', text: '', render: () => '' };
const raw = (event: SSEEvent, action: SeamAction = 'emit'): SeamItem => ({ action, text: '', render: () => serializeEvent(event) });
const json = (event: SSEEvent, data: Json): string => serializeEvent({ event: event.event, data: JSON.stringify(data) });

function parse(event: SSEEvent): Json | null {
  if (event.data.charCodeAt(0) !== 123 /* { */) return null;
  try {
    const value = JSON.parse(event.data) as unknown;
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const details = (v: unknown): Json => (isObject(v) ? { ...v } : {});

/** Adds `prior` to an OpenAI-shaped usage (chat's names, or the Responses API's with `responses`). */
function addOpenAIUsage(u: Json, prior: Usage, responses: boolean): Json {
  const [input, output, inDetails, outDetails] = responses
    ? (['input_tokens', 'output_tokens', 'input_tokens_details', 'output_tokens_details'] as const)
    : (['prompt_tokens', 'completion_tokens', 'prompt_tokens_details', 'completion_tokens_details'] as const);
  const out: Json = { ...u, [input]: n(u[input]) + prior.prompt_tokens, [output]: n(u[output]) + prior.completion_tokens };
  out.total_tokens = n(u.total_tokens) + prior.total_tokens;
  if ((prior.cached_tokens ?? 0) > 0 || isObject(u[inDetails])) {
    const d = details(u[inDetails]);
    d.cached_tokens = n(d.cached_tokens) + (prior.cached_tokens ?? 0);
    out[inDetails] = d;
  }
  if ((prior.reasoning_tokens ?? 0) > 0 || isObject(u[outDetails])) {
    const d = details(u[outDetails]);
    d.reasoning_tokens = n(d.reasoning_tokens) + (prior.reasoning_tokens ?? 0);
    out[outDetails] = d;
  }
  return out;
}

/** Chat completions: `chat.completion.chunk` events, closed by `data: [DONE]`. */
function chatSeam(): DoorSeam {
  let sent = '';
  let refusal: string | null = null;
  let finished = false;
  let model: string | null = null;
  let segmentModel: string | null = null;
  let id: string | null = null;
  let created: unknown;
  let fingerprint: unknown;
  /** Set while a continuation runs: the usage to add to its usage chunk. */
  let prior: Usage | null = null;
  return {
    get sent() {
      return sent;
    },
    get refusal() {
      return refusal;
    },
    get finished() {
      return finished;
    },
    get model() {
      return model;
    },
    get segmentModel() {
      return segmentModel;
    },
    read(event) {
      if (event.data === '[DONE]') return raw(event, 'end');
      const data = parse(event);
      if (data === null) return raw(event);
      if (isObject(data.error) && !Array.isArray(data.choices)) return raw(event, 'break');
      if (segmentModel === null && typeof data.model === 'string') segmentModel = data.model;
      if (prior === null) {
        id ??= typeof data.id === 'string' ? data.id : null;
        created ??= data.created;
        fingerprint ??= data.system_fingerprint;
        if (model === null && typeof data.model === 'string') model = data.model;
      }
      const choices = Array.isArray(data.choices) ? (data.choices as unknown[]) : [];
      let text = '';
      for (const c of choices) {
        if (!isObject(c)) continue;
        if (n(c.index) > 0) refusal ??= 'several_choices';
        if (c.finish_reason !== null && c.finish_reason !== undefined) finished = true;
        const delta = isObject(c.delta) ? c.delta : null;
        if (delta === null) continue;
        if (Array.isArray(delta.tool_calls) || isObject(delta.function_call)) refusal ??= 'tool_call';
        if (typeof delta.reasoning_content === 'string' || typeof delta.reasoning === 'string') refusal ??= 'reasoning';
        if (typeof delta.refusal === 'string') refusal ??= 'non_text';
        if (typeof delta.content === 'string') text += delta.content;
      }
      if (prior === null) {
        return { action: 'emit', text, render: (t) => ((sent += t), t === text ? serializeEvent(event) : json(event, withChatText(data, t))) };
      }
      // A continuation: the stream's id, creation time and model; no second role; usage summed.
      const p = prior;
      const out: Json = { ...data };
      if (id !== null) out.id = id;
      if (created !== undefined) out.created = created;
      if (fingerprint !== undefined) out.system_fingerprint = fingerprint;
      if (model !== null && typeof out.model === 'string') out.model = model;
      if (isObject(data.usage)) out.usage = addOpenAIUsage(data.usage, p, false);
      // Its opening chunk (the role, perhaps an empty content) says nothing the client has not had.
      const opening = choices.length > 0 && text === '' && !isObject(data.usage) && choices.every(isOpening);
      if (opening) return drop;
      out.choices = choices.map((c) => (isObject(c) && isObject(c.delta) && 'role' in c.delta ? { ...c, delta: withoutRole(c.delta) } : c));
      return { action: 'emit', text, render: (t) => ((sent += t), json(event, t === text ? out : withChatText(out, t))) };
    },
    closing: () => 'data: [DONE]\n\n',
    tail: () => 'data: [DONE]\n\n',
    next(p) {
      prior = p;
      segmentModel = null;
    },
  };
}

function isOpening(choice: unknown): boolean {
  if (!isObject(choice) || !isObject(choice.delta) || (choice.finish_reason ?? null) !== null) return false;
  const delta = choice.delta;
  return Object.keys(delta).every((k) => k === 'role' || (k === 'content' && (delta.content === '' || delta.content === null)) || k === 'refusal' && delta.refusal === null);
}

function withoutRole(delta: Json): Json {
  const { role: _role, ...rest } = delta;
  return rest;
}

/** The chunk with its (one) choice's content replaced. */
function withChatText(data: Json, text: string): Json {
  const choices = (data.choices as unknown[]).map((c) => (isObject(c) && isObject(c.delta) && typeof c.delta.content === 'string' ? { ...c, delta: { ...c.delta, content: text } } : c));
  return { ...data, choices };
}

/** Anthropic's Messages API: content blocks by index, closed by `message_stop`. */
function messagesSeam(): DoorSeam {
  let sent = '';
  let refusal: string | null = null;
  let finished = false;
  let model: string | null = null;
  let segmentModel: string | null = null;
  /** The client's open text block, -1 when none is open; the highest block index it has seen. */
  let open = -1;
  let highest = -1;
  let prior: Usage | null = null;
  /** A continuation's block index → the client's. */
  let base = 0;
  let mergeFirst = false;
  /** The continuation's own input counts (its message_start), for the closing usage. */
  let startUsage: Json = {};
  const at = (index: unknown): number => base + n(index);
  return {
    get sent() {
      return sent;
    },
    get refusal() {
      return refusal;
    },
    get finished() {
      return finished;
    },
    get model() {
      return model;
    },
    get segmentModel() {
      return segmentModel;
    },
    read(event) {
      const name = event.event;
      if (name === 'error') return raw(event, 'break');
      if (name === 'message_stop') return raw(event, 'end');
      if (name === 'ping') return raw(event);
      const data = parse(event);
      if (data === null) return raw(event);
      if (prior === null) {
        switch (name) {
          case 'message_start':
            if (isObject(data.message) && typeof data.message.model === 'string') model = segmentModel = data.message.model;
            break;
          case 'content_block_start': {
            const block = isObject(data.content_block) ? data.content_block : {};
            highest = Math.max(highest, n(data.index));
            if (block.type === 'text') open = n(data.index);
            else refusal ??= refusalOf(block.type);
            break;
          }
          case 'content_block_stop':
            if (n(data.index) === open) open = -1;
            break;
          case 'message_delta':
            finished = true;
            break;
          default:
            break;
        }
        const text = name === 'content_block_delta' && isObject(data.delta) && data.delta.type === 'text_delta' && typeof data.delta.text === 'string' ? data.delta.text : '';
        if (name === 'content_block_delta' && isObject(data.delta) && data.delta.type !== 'text_delta') refusal ??= refusalOf(data.delta.type === 'input_json_delta' ? 'tool_use' : data.delta.type);
        return { action: 'emit', text, render: (t) => ((sent += t), t === text ? serializeEvent(event) : json(event, { ...data, delta: { ...(data.delta as Json), text: t } })) };
      }
      // A continuation.
      switch (name) {
        case 'message_start':
          if (isObject(data.message) && isObject(data.message.usage)) startUsage = data.message.usage;
          if (isObject(data.message) && typeof data.message.model === 'string') segmentModel = data.message.model;
          return drop;
        case 'content_block_start': {
          const block = isObject(data.content_block) ? data.content_block : {};
          if (mergeFirst && n(data.index) === 0 && block.type === 'text') return drop;
          if (block.type !== 'text') refusal ??= refusalOf(block.type);
          const index = at(data.index);
          highest = Math.max(highest, index);
          if (block.type === 'text') open = index;
          return raw({ event: name, data: JSON.stringify({ ...data, index }) });
        }
        case 'content_block_delta': {
          const index = at(data.index);
          const delta = isObject(data.delta) ? data.delta : {};
          const text = delta.type === 'text_delta' && typeof delta.text === 'string' ? delta.text : '';
          if (delta.type !== 'text_delta') refusal ??= refusalOf(delta.type === 'input_json_delta' ? 'tool_use' : delta.type);
          return { action: 'emit', text, render: (t) => ((sent += t), json(event, { ...data, index, delta: delta.type === 'text_delta' ? { ...delta, text: t } : delta })) };
        }
        case 'content_block_stop': {
          const index = at(data.index);
          if (index === open) open = -1;
          return raw({ event: name, data: JSON.stringify({ ...data, index }) });
        }
        case 'message_delta': {
          finished = true;
          const u = isObject(data.usage) ? data.usage : {};
          const p = prior;
          const cached = p.cached_tokens ?? 0;
          const written = p.cache_write_tokens ?? 0;
          const usage: Json = {
            ...u,
            input_tokens: n(u.input_tokens ?? startUsage.input_tokens) + p.prompt_tokens - cached - written,
            output_tokens: n(u.output_tokens) + p.completion_tokens,
          };
          if (cached > 0 || 'cache_read_input_tokens' in u || 'cache_read_input_tokens' in startUsage) usage.cache_read_input_tokens = n(u.cache_read_input_tokens ?? startUsage.cache_read_input_tokens) + cached;
          if (written > 0 || 'cache_creation_input_tokens' in u || 'cache_creation_input_tokens' in startUsage) usage.cache_creation_input_tokens = n(u.cache_creation_input_tokens ?? startUsage.cache_creation_input_tokens) + written;
          return raw({ event: name, data: JSON.stringify({ ...data, usage }) });
        }
        default:
          return raw(event);
      }
    },
    closing: () => 'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    tail: () => '',
    next(p) {
      prior = p;
      startUsage = {};
      segmentModel = null;
      // The continuation's first text block goes on in the client's open one; its other blocks follow the client's.
      mergeFirst = open !== -1;
      base = mergeFirst ? open : highest + 1;
    },
  };
}

/** Responses events that only open a response (a continuation's are dropped). */
const OPENING = new Set(['response.created', 'response.in_progress', 'response.queued']);
/** Responses events that close it. */
const CLOSING = new Set(['response.completed', 'response.incomplete']);

/** The Responses API: output items and content parts by index, numbered events, closed by `response.completed`. */
function responsesSeam(): DoorSeam {
  let sent = '';
  let refusal: string | null = null;
  let finished = false;
  let model: string | null = null;
  let segmentModel: string | null = null;
  let snapshot: Json | null = null;
  let sequence = -1;
  /** The client's output items that are done, in order. */
  const done: Json[] = [];
  /** The client's open message item: its id and output index, and the parts of it that are done. */
  let item: { id: string; index: number; parts: Json[] } | null = null;
  /** Its open text part: the content index, and all its text so far (every call's). */
  let part: { index: number; text: string } | null = null;
  let prior: Usage | null = null;
  /** In a continuation: its first message item goes on in the client's open one (`merge`), its first part in the open part. */
  let merge = false;
  let mergePart = false;
  let contItemId: string | null = null;
  let outputBase = 0;
  let contentBase = 0;
  const next = () => ++sequence;
  const event = (name: string, data: Json): string => serializeEvent({ event: name, data: JSON.stringify({ ...data, sequence_number: next() }) });
  return {
    get sent() {
      return sent;
    },
    get refusal() {
      return refusal;
    },
    get finished() {
      return finished;
    },
    get model() {
      return model;
    },
    get segmentModel() {
      return segmentModel;
    },
    read(e) {
      const name = e.event ?? '';
      if (name === 'error' || name === 'response.failed') return raw(e, 'break');
      const data = parse(e);
      if (data === null) return raw(e);
      if (prior === null) return first(e, name, data);
      return continued(name, data);
    },
    closing() {
      const response = { ...(snapshot ?? {}), status: 'completed', output: done };
      return event('response.completed', { type: 'response.completed', response });
    },
    tail: () => '',
    next(p) {
      prior = p;
      segmentModel = null;
      merge = item !== null;
      mergePart = merge && part !== null;
      contItemId = null;
      outputBase = merge ? item!.index : done.length;
      contentBase = mergePart ? part!.index : (item?.parts.length ?? 0);
    },
  };

  function first(e: SSEEvent, name: string, data: Json): SeamItem {
    if (typeof data.sequence_number === 'number') sequence = data.sequence_number;
    if (OPENING.has(name) && isObject(data.response)) {
      snapshot = data.response;
      if (model === null && typeof data.response.model === 'string') model = segmentModel = data.response.model;
    }
    if (CLOSING.has(name)) return raw(e, 'end');
    if (name === 'response.output_item.added' && isObject(data.item)) {
      if (data.item.type === 'message') item = { id: String(data.item.id), index: n(data.output_index), parts: [] };
      else refusal ??= refusalOf(data.item.type);
    } else if (name === 'response.content_part.added' && isObject(data.part)) {
      if (data.part.type === 'output_text') part = { index: n(data.content_index), text: '' };
      else refusal ??= refusalOf(data.part.type);
    } else if (name === 'response.content_part.done') {
      if (item !== null && isObject(data.part)) item.parts.push(data.part);
      part = null;
    } else if (name === 'response.output_item.done' && isObject(data.item)) {
      done.push(data.item);
      if (data.item.type === 'message') finished = true;
      item = null;
    } else if (name.endsWith('.delta') && name !== 'response.output_text.delta') {
      refusal ??= refusalOf(name.includes('function_call') || name.includes('_call') ? 'function_call' : name.includes('reasoning') ? 'reasoning' : name);
    }
    const text = name === 'response.output_text.delta' && typeof data.delta === 'string' ? data.delta : '';
    return {
      action: 'emit',
      text,
      render: (t) => {
        sent += t;
        if (part !== null) part.text += t;
        return t === text ? serializeEvent(e) : json(e, { ...data, delta: t });
      },
    };
  }

  function continued(name: string, data: Json): SeamItem {
    // A continuation: numbered on from the stream's last event, in the client's open item and part.
    if (OPENING.has(name)) {
      if (isObject(data.response) && typeof data.response.model === 'string') segmentModel ??= data.response.model;
      return drop;
    }
    const own = merge && contItemId !== null && data.item_id === contItemId;
    const inPart = own && mergePart && n(data.content_index) === 0;
    const mapped = (extra: Json = {}): Json => {
      const out: Json = { ...data, ...extra };
      if ('output_index' in data) out.output_index = outputBase + n(data.output_index);
      if (own) {
        out.item_id = item!.id;
        if ('content_index' in data) out.content_index = contentBase + n(data.content_index);
      }
      return out;
    };
    if (name === 'response.output_item.added') {
      const it = isObject(data.item) ? data.item : {};
      if (merge && contItemId === null && n(data.output_index) === 0 && it.type === 'message') {
        contItemId = String(it.id);
        return drop;
      }
      if (it.type !== 'message') refusal ??= refusalOf(it.type);
      return { action: 'emit', text: '', render: () => event(name, mapped()) };
    }
    if (name === 'response.content_part.added' && inPart) return drop;
    if (name === 'response.output_text.delta') {
      const text = typeof data.delta === 'string' ? data.delta : '';
      return {
        action: 'emit',
        text,
        render: (t) => {
          sent += t;
          if (inPart) part!.text += t;
          return event(name, mapped({ delta: t }));
        },
      };
    }
    if (name === 'response.output_text.done' && inPart) return { action: 'emit', text: '', render: () => event(name, mapped({ text: part!.text })) };
    if (name === 'response.content_part.done' && inPart) return { action: 'emit', text: '', render: () => event(name, mapped({ part: { ...(isObject(data.part) ? data.part : {}), text: part!.text } })) };
    if (name === 'response.output_item.done') {
      const it = isObject(data.item) ? data.item : {};
      const out = merge && it.id === contItemId ? mergedItem(it) : it;
      done.push(out);
      if (it.type === 'message') finished = true;
      return { action: 'emit', text: '', render: () => event(name, mapped({ item: out })) };
    }
    if (CLOSING.has(name) && isObject(data.response)) {
      const r = data.response;
      const response: Json = { ...r, output: done };
      if (snapshot !== null) {
        response.id = snapshot.id;
        if ('created_at' in snapshot) response.created_at = snapshot.created_at;
        if (typeof snapshot.model === 'string') response.model = snapshot.model;
      }
      if (isObject(r.usage)) response.usage = addOpenAIUsage(r.usage, prior!, true);
      return { action: 'end', text: '', render: () => event(name, { ...data, response }) };
    }
    if (name.endsWith('.delta')) refusal ??= refusalOf(name.includes('function_call') || name.includes('_call') ? 'function_call' : name.includes('reasoning') ? 'reasoning' : name);
    return { action: 'emit', text: '', render: () => event(name, mapped()) };
  }

  /** The continuation's message item as the client's: its id, the parts done before, the open part's whole text. */
  function mergedItem(it: Json): Json {
    const content = Array.isArray(it.content) ? [...(it.content as unknown[])] : [];
    if (mergePart && isObject(content[0])) content[0] = { ...content[0], text: part!.text };
    return { ...it, id: item!.id, content: [...item!.parts, ...content] };
  }
}

/** The seam of a front door's stream (route API names: `responses`, `messages`; `chat.completions`), or null when its streams are not continued. */
export function doorSeamOf(route: string): DoorSeam | null {
  if (route === 'responses') return responsesSeam();
  if (route === 'messages') return messagesSeam();
  if (route === 'chat.completions') return chatSeam();
  return null;
}
