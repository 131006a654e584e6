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
  /** An event that says nothing about the answer (Anthropic's `ping`): sent at once, even while text is held at a seam. */
  neutral?: boolean;
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
  /** The closing events of a stream whose answer finished but whose closing events were lost; `usage`, every call's, when known. */
  closing(usage: Usage | null): string;
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

/** What every seam keeps of the client's stream (the read-only fields of {@link DoorSeam}), written by the seam itself. */
interface SeamState {
  sent: string;
  refusal: string | null;
  finished: boolean;
  model: string | null;
  segmentModel: string | null;
}

const seamState = (): SeamState => ({ sent: '', refusal: null, finished: false, model: null, segmentModel: null });

/** A seam: its state, with the door's way of reading events. */
function seamOf(state: SeamState, methods: Pick<DoorSeam, 'read' | 'closing' | 'tail' | 'next'>): DoorSeam {
  return Object.assign(state, methods);
}

/** Chat completions: `chat.completion.chunk` events, closed by `data: [DONE]`. */
function chatSeam(): DoorSeam {
  const st = seamState();
  let id: string | null = null;
  let created: unknown;
  let fingerprint: unknown;
  /** Set while a continuation runs: the usage to add to its usage chunk. */
  let prior: Usage | null = null;
  return seamOf(st, {
    read(event) {
      if (event.data === '[DONE]') return raw(event, 'end');
      const data = parse(event);
      if (data === null) return raw(event);
      if (isObject(data.error) && !Array.isArray(data.choices)) return raw(event, 'break');
      if (st.segmentModel === null && typeof data.model === 'string') st.segmentModel = data.model;
      if (prior === null) {
        id ??= typeof data.id === 'string' ? data.id : null;
        created ??= data.created;
        fingerprint ??= data.system_fingerprint;
        if (st.model === null && typeof data.model === 'string') st.model = data.model;
      }
      const choices = Array.isArray(data.choices) ? (data.choices as unknown[]) : [];
      let text = '';
      for (const c of choices) {
        if (!isObject(c)) continue;
        if (n(c.index) > 0) st.refusal ??= 'several_choices';
        if (c.finish_reason !== null && c.finish_reason !== undefined) st.finished = true;
        const delta = isObject(c.delta) ? c.delta : null;
        if (delta === null) continue;
        if (Array.isArray(delta.tool_calls) || isObject(delta.function_call)) st.refusal ??= 'tool_call';
        // A continuation's reasoning is left out (below): only the first call's makes the answer one that cannot go on.
        if (prior === null && (typeof delta.reasoning_content === 'string' || typeof delta.reasoning === 'string')) st.refusal ??= 'reasoning';
        if (typeof delta.refusal === 'string') st.refusal ??= 'non_text';
        if (typeof delta.content === 'string') text += delta.content;
      }
      if (prior === null) {
        return { action: 'emit', text, render: (t) => ((st.sent += t), t === text ? serializeEvent(event) : json(event, withChatText(data, t))) };
      }
      // A continuation: the stream's id, creation time and model; no second role; usage summed.
      const p = prior;
      const out: Json = { ...data };
      if (id !== null) out.id = id;
      if (created !== undefined) out.created = created;
      if (fingerprint !== undefined) out.system_fingerprint = fingerprint;
      if (st.model !== null && typeof out.model === 'string') out.model = st.model;
      if (isObject(data.usage)) out.usage = addOpenAIUsage(data.usage, p, false);
      // Its opening chunk (the role, perhaps an empty content) and its reasoning say nothing the client reads on from.
      const kept = choices.map((c) => (isObject(c) && isObject(c.delta) ? { ...c, delta: continuedDelta(c.delta) } : c));
      if (kept.length > 0 && text === '' && !isObject(data.usage) && kept.every(isOpening)) return drop;
      out.choices = kept;
      return { action: 'emit', text, render: (t) => ((st.sent += t), json(event, t === text ? out : withChatText(out, t))) };
    },
    closing: () => 'data: [DONE]\n\n',
    tail: () => 'data: [DONE]\n\n',
    next(p) {
      prior = p;
      st.segmentModel = null;
    },
  });
}

function isOpening(choice: unknown): boolean {
  if (!isObject(choice) || !isObject(choice.delta) || (choice.finish_reason ?? null) !== null) return false;
  const delta = choice.delta;
  return Object.keys(delta).every((k) => k === 'role' || (k === 'content' && (delta.content === '' || delta.content === null)) || (k === 'refusal' && delta.refusal === null));
}

/** A continuation's delta as the client gets it: no second role, no reasoning. */
function continuedDelta(delta: Json): Json {
  const { role: _role, reasoning_content: _reasoning, reasoning: _summary, ...rest } = delta;
  return rest;
}

/** The chunk with its (one) choice's content replaced. */
function withChatText(data: Json, text: string): Json {
  const choices = (data.choices as unknown[]).map((c) => (isObject(c) && isObject(c.delta) && typeof c.delta.content === 'string' ? { ...c, delta: { ...c.delta, content: text } } : c));
  return { ...data, choices };
}

/** Anthropic's Messages API: content blocks by index, closed by `message_stop`. */
function messagesSeam(): DoorSeam {
  const st = seamState();
  /** The client's open text block, -1 when none is open; the highest block index it has seen. */
  let open = -1;
  let highest = -1;
  let prior: Usage | null = null;
  /** A continuation's block index → the client's, or -1 for a block left out (thinking, which the client never sees). */
  const blocks = new Map<number, number>();
  /** The continuation's first text block is still to go on in the client's open one. */
  let pendingMerge = false;
  /** The continuation's own input counts (its message_start), for the closing usage. */
  let startUsage: Json = {};
  const stopOf = (index: number) => serializeEvent({ event: 'content_block_stop', data: JSON.stringify({ type: 'content_block_stop', index }) });
  /** The client's open block, closed before a continuation's block that does not go on in it. */
  const closeOpen = (): string => {
    if (!pendingMerge) return '';
    pendingMerge = false;
    if (open === -1) return '';
    const out = stopOf(open);
    open = -1;
    return out;
  };
  return seamOf(st, {
    read(event) {
      const name = event.event;
      if (name === 'error') return raw(event, 'break');
      if (name === 'message_stop') return raw(event, 'end');
      if (name === 'ping') return { ...raw(event), neutral: true };
      const data = parse(event);
      if (data === null) return raw(event);
      if (prior === null) {
        switch (name) {
          case 'message_start':
            if (isObject(data.message) && typeof data.message.model === 'string') st.model = st.segmentModel = data.message.model;
            break;
          case 'content_block_start': {
            const block = isObject(data.content_block) ? data.content_block : {};
            highest = Math.max(highest, n(data.index));
            if (block.type === 'text') open = n(data.index);
            else st.refusal ??= refusalOf(block.type);
            break;
          }
          case 'content_block_stop':
            if (n(data.index) === open) open = -1;
            break;
          case 'message_delta':
            st.finished = true;
            break;
          default:
            break;
        }
        const text = name === 'content_block_delta' && isObject(data.delta) && data.delta.type === 'text_delta' && typeof data.delta.text === 'string' ? data.delta.text : '';
        if (name === 'content_block_delta' && isObject(data.delta) && data.delta.type !== 'text_delta') st.refusal ??= refusalOf(data.delta.type === 'input_json_delta' ? 'tool_use' : data.delta.type);
        return { action: 'emit', text, render: (t) => ((st.sent += t), t === text ? serializeEvent(event) : json(event, { ...data, delta: { ...(data.delta as Json), text: t } })) };
      }
      // A continuation: its blocks mapped to the client's indexes, thinking left out, its first text block merged.
      switch (name) {
        case 'message_start':
          if (isObject(data.message) && isObject(data.message.usage)) startUsage = data.message.usage;
          if (isObject(data.message) && typeof data.message.model === 'string') st.segmentModel = data.message.model;
          return drop;
        case 'content_block_start': {
          const block = isObject(data.content_block) ? data.content_block : {};
          const own = n(data.index);
          if (block.type === 'thinking' || block.type === 'redacted_thinking') {
            blocks.set(own, -1);
            return drop;
          }
          if (pendingMerge && open !== -1 && block.type === 'text') {
            pendingMerge = false;
            blocks.set(own, open);
            return drop;
          }
          const before = closeOpen();
          const index = ++highest;
          blocks.set(own, index);
          if (block.type === 'text') open = index;
          else st.refusal ??= refusalOf(block.type);
          return { action: 'emit', text: '', render: () => before + json(event, { ...data, index }) };
        }
        case 'content_block_delta': {
          const index = blocks.get(n(data.index));
          if (index === undefined || index === -1) return drop;
          const delta = isObject(data.delta) ? data.delta : {};
          const text = delta.type === 'text_delta' && typeof delta.text === 'string' ? delta.text : '';
          if (delta.type !== 'text_delta') st.refusal ??= refusalOf(delta.type === 'input_json_delta' ? 'tool_use' : delta.type);
          return { action: 'emit', text, render: (t) => ((st.sent += t), json(event, { ...data, index, delta: delta.type === 'text_delta' ? { ...delta, text: t } : delta })) };
        }
        case 'content_block_stop': {
          const index = blocks.get(n(data.index));
          if (index === undefined || index === -1) return drop;
          if (index === open) open = -1;
          return raw({ event: name, data: JSON.stringify({ ...data, index }) });
        }
        case 'message_delta': {
          st.finished = true;
          // A continuation with no text at all: the client's block is closed before the message ends.
          const before = closeOpen();
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
          return { action: 'emit', text: '', render: () => before + json(event, { ...data, usage }) };
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
      st.segmentModel = null;
      blocks.clear();
      // The continuation's first text block goes on in the client's open one; its other blocks follow the client's.
      pendingMerge = open !== -1;
    },
  });
}

/** Responses events that only open a response (a continuation's are dropped). */
const OPENING = new Set(['response.created', 'response.in_progress', 'response.queued']);
/** Responses events that close it. */
const CLOSING = new Set(['response.completed', 'response.incomplete']);

/** The Responses API usage of gateway usage. */
function responsesUsage(u: Usage): Json {
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
    total_tokens: u.total_tokens,
  };
}

/**
 * The Responses API: output items and content parts by index, numbered events, closed by `response.completed`.
 * One state for the client's response (its items, the open message item and text part, the numbering), fed by
 * the first call's events as they are and by a continuation's once mapped to the client's ids and indexes.
 */
function responsesSeam(): DoorSeam {
  const st = seamState();
  let snapshot: Json | null = null;
  let sequence = -1;
  /** The client's output items that are done, in order, and the next output index free. */
  const done: Json[] = [];
  let nextOutput = 0;
  /** The client's open message item (its id, output index, and parts done), and its open text part (all its text). */
  let item: { id: string; index: number; parts: Json[] } | null = null;
  let part: { index: number; text: string } | null = null;
  let prior: Usage | null = null;
  /** A continuation: output index → the client's (-1: left out, a reasoning item), its item ids → the client's. */
  const outputs = new Map<number, number>();
  const ids = new Map<string, string>();
  /** The continuation's first message item is still to go on in the client's open item (and its first part in the open part). */
  let pendingMerge = false;
  let mergedId: string | null = null;
  let contentBase = 0;
  /** The error event that broke the stream, for the `response.failed` after it. */
  let failure: Json | null = null;

  const event = (name: string, data: Json): string => serializeEvent({ event: name, data: JSON.stringify({ ...data, type: name, sequence_number: ++sequence }) });
  const identity = (r: Json): Json => (snapshot === null ? r : { ...r, id: snapshot.id, ...('created_at' in snapshot ? { created_at: snapshot.created_at } : {}), ...(typeof snapshot.model === 'string' ? { model: snapshot.model } : {}) });

  /** Follows the client's state through one event (in the client's ids and indexes); may replace the done events' text. */
  const track = (name: string, data: Json): Json => {
    if (name === 'response.output_item.added' && isObject(data.item)) {
      nextOutput = Math.max(nextOutput, n(data.output_index) + 1);
      if (data.item.type === 'message') item = { id: String(data.item.id), index: n(data.output_index), parts: [] };
      else st.refusal ??= refusalOf(data.item.type);
    } else if (name === 'response.content_part.added' && isObject(data.part)) {
      if (data.part.type === 'output_text') part = { index: n(data.content_index), text: '' };
      else st.refusal ??= refusalOf(data.part.type);
    } else if (name === 'response.output_text.done' && part !== null && n(data.content_index) === part.index) {
      return { ...data, text: part.text };
    } else if (name === 'response.content_part.done') {
      const whole = isObject(data.part) && part !== null && n(data.content_index) === part.index ? { ...data.part, text: part.text } : data.part;
      if (item !== null && isObject(whole)) item.parts.push(whole);
      part = null;
      return { ...data, part: whole };
    } else if (name === 'response.output_item.done' && isObject(data.item)) {
      const whole = item !== null && data.item.id === item.id ? { ...data.item, content: item.parts } : data.item;
      done.push(whole);
      if (whole.type === 'message') st.finished = true;
      if (item !== null && data.item.id === item.id) item = null;
      return { ...data, item: whole };
    } else if (name.endsWith('.delta') && name !== 'response.output_text.delta') {
      st.refusal ??= refusalOf(name.includes('_call') ? 'function_call' : name.includes('reasoning') ? 'reasoning' : name);
    }
    return data;
  };

  /** The client's open item closed (its part's text done), when a continuation goes on with another item (`when`). */
  const closeOpen = (when: boolean): string => {
    if (!when || item === null) return '';
    const it = item;
    let out = '';
    if (part !== null) {
      const p = part;
      out += event('response.output_text.done', { item_id: it.id, output_index: it.index, content_index: p.index, text: p.text, logprobs: [] });
      out += event('response.content_part.done', track('response.content_part.done', { item_id: it.id, output_index: it.index, content_index: p.index, part: { type: 'output_text', text: p.text, annotations: [] } }));
    }
    out += event('response.output_item.done', track('response.output_item.done', { output_index: it.index, item: { id: it.id, type: 'message', role: 'assistant', status: 'completed', content: [] } }));
    return out;
  };

  return seamOf(st, {
    read(e) {
      const name = e.event ?? '';
      const data = parse(e);
      if (name === 'error' || name === 'response.failed') {
        // Renumbered after the client's last event, in the client's response.
        const body = data ?? {};
        if (name === 'error') failure = body;
        return {
          action: 'break',
          text: '',
          render: () => (name === 'error' ? event(name, body) : event(name, { ...body, response: { ...identity(isObject(body.response) ? body.response : {}), output: done } })),
        };
      }
      if (data === null) return raw(e);
      if (prior === null) return first(e, name, data);
      return continued(name, data);
    },
    closing(usage) {
      const response = { ...(snapshot ?? {}), status: 'completed', output: done, ...(usage === null ? {} : { usage: responsesUsage(usage) }) };
      return event('response.completed', { response });
    },
    tail() {
      // An error event passed on as the end: the failed response after it, as the client would have had it.
      if (failure === null) return '';
      const error = { code: failure.code ?? (isObject(failure.error) ? failure.error.code : null) ?? 'server_error', message: failure.message ?? (isObject(failure.error) ? failure.error.message : null) ?? 'The response failed.' };
      return event('response.failed', { response: { ...(snapshot ?? {}), status: 'failed', error, output: done } });
    },
    next(p) {
      prior = p;
      st.segmentModel = null;
      failure = null;
      outputs.clear();
      ids.clear();
      pendingMerge = item !== null;
      mergedId = null;
      contentBase = part !== null ? part.index : (item?.parts.length ?? 0);
    },
  });

  function first(e: SSEEvent, name: string, data: Json): SeamItem {
    if (typeof data.sequence_number === 'number') sequence = data.sequence_number;
    if (OPENING.has(name) && isObject(data.response)) {
      snapshot = data.response;
      if (st.model === null && typeof data.response.model === 'string') st.model = st.segmentModel = data.response.model;
    }
    if (CLOSING.has(name)) return raw(e, 'end');
    const text = name === 'response.output_text.delta' && typeof data.delta === 'string' ? data.delta : '';
    return {
      action: 'emit',
      text,
      // The state follows the events as they are rendered (a seam may hold text back; what follows it waits).
      render: (t) => {
        if (name === 'response.output_text.delta') {
          st.sent += t;
          if (part !== null) part.text += t;
          return t === text ? serializeEvent(e) : json(e, { ...data, delta: t });
        }
        const tracked = track(name, data);
        return tracked === data ? serializeEvent(e) : json(e, tracked);
      },
    };
  }

  function continued(name: string, data: Json): SeamItem {
    // Decided as the event is read: where it goes (the mapping). Done as it is rendered: the state and the output,
    // so text held at the seam counts before the events after it.
    if (OPENING.has(name)) {
      if (isObject(data.response) && typeof data.response.model === 'string') st.segmentModel ??= data.response.model;
      return drop;
    }
    if (CLOSING.has(name) && isObject(data.response)) {
      const r = data.response;
      return {
        action: 'end',
        text: '',
        render: () => {
          // A continuation without a message item: the client's is closed with what it had.
          const before = closeOpen(pendingMerge);
          pendingMerge = false;
          const response: Json = { ...identity(r), output: done };
          if (isObject(r.usage)) response.usage = addOpenAIUsage(r.usage, prior!, true);
          return before + event(name, { ...data, response });
        },
      };
    }
    const own = n(data.output_index);
    if (name === 'response.output_item.added') {
      const it = isObject(data.item) ? data.item : {};
      if (it.type === 'reasoning') {
        // Thinking the client never sees: its answer goes on as text.
        outputs.set(own, -1);
        return drop;
      }
      if (pendingMerge && item !== null && it.type === 'message') {
        pendingMerge = false;
        outputs.set(own, item.index);
        ids.set(String(it.id), item.id);
        mergedId = String(it.id);
        return drop;
      }
      const closes = pendingMerge;
      pendingMerge = false;
      const index = nextOutput;
      outputs.set(own, index);
      nextOutput = index + 1;
      return { action: 'emit', text: '', render: () => closeOpen(closes) + event(name, track(name, { ...data, output_index: index })) };
    }
    const index = 'output_index' in data ? outputs.get(own) : undefined;
    if (index === -1) return drop;
    const merged = mergedId !== null && data.item_id === mergedId;
    const mapped: Json = { ...data };
    if (index !== undefined) mapped.output_index = index;
    if (typeof data.item_id === 'string' && ids.has(data.item_id)) mapped.item_id = ids.get(data.item_id);
    if (isObject(data.item) && typeof data.item.id === 'string' && ids.has(data.item.id)) mapped.item = { ...data.item, id: ids.get(data.item.id) };
    if (merged && 'content_index' in data) mapped.content_index = contentBase + n(data.content_index);
    // The continuation's first part goes on in the client's open one.
    if (name === 'response.content_part.added' && merged && part !== null && mapped.content_index === part.index) return drop;
    if (name === 'response.output_text.delta') {
      const text = typeof data.delta === 'string' ? data.delta : '';
      return {
        action: 'emit',
        text,
        render: (t) => {
          st.sent += t;
          if (part !== null) part.text += t;
          return event(name, { ...mapped, delta: t });
        },
      };
    }
    return { action: 'emit', text: '', render: () => event(name, track(name, mapped)) };
  }
}

/** The seam of a front door's stream (route API names: `responses`, `messages`; `chat.completions`), or null when its streams are not continued. */
export function doorSeamOf(route: string): DoorSeam | null {
  if (route === 'responses') return responsesSeam();
  if (route === 'messages') return messagesSeam();
  if (route === 'chat.completions') return chatSeam();
  return null;
}
