import { createServer, STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

/** An upgrade request as the mock saw it, refused or not. */
export interface RealtimeHandshake {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

/** Token counts every `response.done` reports (the same whatever the modality, so a test knows what to expect). */
export interface RealtimeUsage {
  inputText: number;
  inputAudio: number;
  /** Cached input tokens, all of them text; a subset of the input, as the API counts them. */
  cached: number;
  outputText: number;
  outputAudio: number;
}

/** input 300 (100 text + 200 audio, 50 of the text cached), output 150 (30 text + 120 audio), total 450. */
export const DEFAULT_REALTIME_USAGE: Readonly<RealtimeUsage> = Object.freeze({ inputText: 100, inputAudio: 200, cached: 50, outputText: 30, outputAudio: 120 });

export interface MockRealtimeOptions {
  usage?: Partial<RealtimeUsage>;
  /** What the user "said" in each committed audio buffer. */
  transcript?: string;
  /** Audio deltas per response (each followed by a transcript delta). */
  audioChunks?: number;
  /**
   * Pause between a response's events, in ms. 0 (the default) spaces them with setImmediate only, which a
   * client on loopback rarely beats; a test that cancels mid-response through a gateway sets this.
   */
  deltaDelayMs?: number;
}

export interface MockRealtime {
  /** http://127.0.0.1:<port>/v1 — the gateway turns http into ws itself. */
  baseURL: string;
  /** http://127.0.0.1:<port> (no /v1), for Azure-style paths. */
  origin: string;
  port: number;
  /** Every upgrade request received, accepted or refused. */
  handshakes: RealtimeHandshake[];
  /** Every client event (parsed JSON) received, across sockets, in order. */
  received: Array<Record<string, unknown>>;
  /** Sockets currently open. */
  sockets(): number;
  /** Close codes the mock saw from the gateway side. */
  closes: Array<{ code: number; reason: string }>;
  /** Next upgrade is refused with this HTTP status and JSON error body (OpenAI's envelope) instead of accepted. */
  refuseNext(status: number, message?: string): void;
  /** Sends a raw server event to every open socket (for tests that inject events). */
  broadcast(event: Record<string, unknown>): void;
  close(): Promise<void>;
}

type Json = Record<string, any>;

/** The answer every response speaks, one word per transcript (or text) delta. */
const ANSWER_WORDS = ['Sunny', 'and', 'warm', 'today.'];

// One counter for all mocks in the process: ids stay unique even across two mocks in one test.
let seq = 0;
const newId = (prefix: string) => `${prefix}_mock${(++seq).toString(36).padStart(8, '0')}`;

/**
 * A mock of OpenAI's Realtime API over WebSocket, GA wire format (no `OpenAI-Beta` header, `session.type`,
 * `conversation.item.added`/`done`, `response.output_audio.*`), and of Azure OpenAI's GA realtime endpoint:
 * - `GET /v1/realtime?model=<m>` with `authorization: Bearer …` (OpenAI);
 * - `GET /openai/v1/realtime?model=<deployment>` with `api-key` (Azure; its 401 carries Azure's own envelope).
 * Each socket gets `session.created`, then an answer per client event: `session.update`, `input_audio_buffer.*`,
 * `conversation.item.*` and `response.create`/`response.cancel`, the latter two driving a scripted audio (or text)
 * answer, "Sunny and warm today.", whose `response.done` carries the configured usage. There is no VAD: a turn
 * ends when the client commits the buffer.
 */
export async function startMockRealtime(options: MockRealtimeOptions = {}): Promise<MockRealtime> {
  const config: Config = {
    usage: { ...DEFAULT_REALTIME_USAGE, ...options.usage },
    transcript: options.transcript ?? 'What is the weather like?',
    deltas: answerDeltas(options.audioChunks ?? 3),
    deltaDelayMs: options.deltaDelayMs ?? 0,
  };
  const handshakes: RealtimeHandshake[] = [];
  const received: Array<Record<string, unknown>> = [];
  const closes: Array<{ code: number; reason: string }> = [];
  let refusal: { status: number; message: string } | undefined;

  // Only upgrades are served; a plain request is the client forgetting the upgrade.
  const server = createServer((_req, res) => {
    const text = JSON.stringify(openAIError('This endpoint only accepts WebSocket upgrades.', 426));
    res.writeHead(426, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  const wss = new WebSocketServer({ noServer: true });

  server.on('upgrade', (req, socket, head) => {
    // A client that resets mid-refusal must not crash the test process.
    socket.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://mock');
    const handshake: RealtimeHandshake = { path: url.pathname, query: Object.fromEntries(url.searchParams), headers: { ...req.headers } };
    handshakes.push(handshake);
    if (refusal) {
      const { status, message } = refusal;
      refusal = undefined;
      return refuse(socket, status, openAIError(message, status));
    }
    const denied = check(handshake);
    if (denied) return refuse(socket, denied.status, denied.body);
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('close', (code, reason) => closes.push({ code, reason: reason.toString() }));
      serve(ws, handshake.query.model!, config, received);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    baseURL: `${origin}/v1`,
    origin,
    port,
    handshakes,
    received,
    closes,
    sockets: () => wss.clients.size,
    refuseNext(status, message) {
      refusal = { status, message: message ?? `Mock refusal ${status}` };
    },
    broadcast(event) {
      const text = JSON.stringify({ event_id: newId('event'), ...event });
      for (const ws of wss.clients) if (ws.readyState === ws.OPEN) ws.send(text);
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Upgraded sockets are no longer the http server's, so closeAllConnections() does not reach them.
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Config {
  usage: RealtimeUsage;
  transcript: string;
  deltas: string[];
  deltaDelayMs: number;
}

/** Why a handshake is refused, or undefined to accept it. */
function check(h: RealtimeHandshake): { status: number; body: unknown } | undefined {
  const azure = h.path === '/openai/v1/realtime';
  if (h.path !== '/v1/realtime' && !azure) return { status: 404, body: openAIError(`Invalid URL (GET ${h.path})`, 404) };
  if (azure && !h.headers['api-key']) {
    // Azure's front door answers a missing key before the OpenAI-style service sees the request.
    return {
      status: 401,
      body: { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } },
    };
  }
  const auth = h.headers.authorization;
  if (!azure && !(typeof auth === 'string' && /^Bearer\s+\S/i.test(auth))) return { status: 401, body: openAIError('Missing bearer', 401) };
  if (!h.query.model) return { status: 400, body: openAIError("Missing required parameter: 'model'.", 400, 'model') };
  return undefined;
}

/** OpenAI's error envelope; type and code follow the status the way the API's do. */
function openAIError(message: string, status: number, param: string | null = null) {
  const type = status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const code = status === 401 ? 'invalid_api_key' : status === 429 ? 'rate_limit_exceeded' : status === 400 && param ? 'missing_required_parameter' : null;
  return { error: { message, type, code, param } };
}

/** Refuses an upgrade with a plain HTTP answer: the socket never became a WebSocket. */
function refuse(socket: Duplex, status: number, body: unknown) {
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nx-request-id: req_mock\r\nconnection: close\r\n\r\n${text}`,
  );
}

/** The transcript deltas of a response with `n` audio chunks: the answer's words, the last delta taking any left over, cycling if `n` exceeds them. */
function answerDeltas(n: number): string[] {
  const deltas: string[] = [];
  for (let i = 0; i < n; i++) deltas.push((i === 0 ? '' : ' ') + ANSWER_WORDS[i % ANSWER_WORDS.length]);
  if (n > 0 && n < ANSWER_WORDS.length) deltas[n - 1] += ' ' + ANSWER_WORDS.slice(n).join(' ');
  return deltas;
}

/** A response's `usage`; a cancelled one produced no output tokens (the simplification the mock makes). */
function usageOf(u: RealtimeUsage, completed: boolean) {
  const outputText = completed ? u.outputText : 0;
  const outputAudio = completed ? u.outputAudio : 0;
  const input = u.inputText + u.inputAudio;
  const output = outputText + outputAudio;
  return {
    total_tokens: input + output,
    input_tokens: input,
    output_tokens: output,
    input_token_details: {
      text_tokens: u.inputText,
      audio_tokens: u.inputAudio,
      image_tokens: 0,
      cached_tokens: u.cached,
      cached_tokens_details: { text_tokens: u.cached, audio_tokens: 0, image_tokens: 0 },
    },
    output_token_details: { text_tokens: outputText, audio_tokens: outputAudio },
  };
}

/** The state of one socket: its session, the conversation's last item, and the response being streamed. */
interface Conversation {
  ws: WebSocket;
  session: Json;
  conversationId: string;
  lastItemId: string | null;
  active: { cancel(): void; stop(): void } | undefined;
}

function serve(ws: WebSocket, model: string, config: Config, received: Array<Record<string, unknown>>) {
  const c: Conversation = {
    ws,
    session: {
      type: 'realtime',
      object: 'realtime.session',
      id: newId('sess'),
      model,
      output_modalities: ['audio'],
      instructions: '',
      tools: [],
      tool_choice: 'auto',
      max_output_tokens: 'inf',
      expires_at: Math.floor(Date.now() / 1000) + 3600,
      audio: {
        input: { format: { type: 'audio/pcm', rate: 24000 } },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
      },
    },
    conversationId: newId('conv'),
    lastItemId: null,
    active: undefined,
  };
  // A socket torn down mid-handshake or mid-frame reports here; the close handler does the cleanup.
  ws.on('error', () => {});
  ws.on('close', () => c.active?.stop());
  send(c, 'session.created', { session: c.session });

  ws.on('message', (data, isBinary) => {
    if (isBinary) return sendError(c, 'Binary frames are not supported: send JSON events as text frames.', null);
    let event: unknown;
    try {
      event = JSON.parse(String(data));
    } catch {
      return sendError(c, 'The event could not be parsed as JSON.', null);
    }
    if (typeof event !== 'object' || event === null || Array.isArray(event)) return sendError(c, 'An event must be a JSON object.', null);
    const e = event as Json;
    received.push(e);
    const clientId = typeof e.event_id === 'string' ? e.event_id : null;
    switch (e.type) {
      case 'session.update':
        c.session = merge(c.session, isObject(e.session) ? e.session : {});
        return send(c, 'session.updated', { session: c.session });
      case 'input_audio_buffer.append':
        return;
      case 'input_audio_buffer.clear':
        return send(c, 'input_audio_buffer.cleared', {});
      case 'input_audio_buffer.commit':
        return commit(c, config);
      case 'conversation.item.create': {
        const item: Json = { ...(isObject(e.item) ? e.item : {}), object: 'realtime.item', status: 'completed' };
        if (typeof item.id !== 'string') item.id = newId('item');
        return addItem(c, item);
      }
      case 'conversation.item.delete':
        return send(c, 'conversation.item.deleted', { item_id: e.item_id ?? null });
      case 'conversation.item.truncate':
        return send(c, 'conversation.item.truncated', { item_id: e.item_id ?? null, content_index: e.content_index ?? 0, audio_end_ms: e.audio_end_ms ?? 0 });
      case 'response.create':
        if (c.active) return sendError(c, 'Conversation already has an active response in progress.', clientId, 'conversation_already_has_active_response');
        return respond(c, config, isObject(e.response) ? e.response : {});
      case 'response.cancel':
        if (!c.active) return sendError(c, 'Cancellation failed: no active response found.', clientId, 'response_cancel_not_active');
        return c.active.cancel();
      default:
        return sendError(c, `Invalid value: '${String(e.type)}'. Not a client event type the mock knows.`, clientId, 'invalid_value', 'type');
    }
  });
}

/** Sends a server event with a fresh event_id; a no-op once the socket is closing. */
function send(c: Conversation, type: string, fields: Json) {
  if (c.ws.readyState !== c.ws.OPEN) return;
  c.ws.send(JSON.stringify({ type, event_id: newId('event'), ...fields }));
}

function sendError(c: Conversation, message: string, clientEventId: string | null, code = 'invalid_value', param: string | null = null) {
  send(c, 'error', { error: { type: 'invalid_request_error', code, message, param, event_id: clientEventId } });
}

/** The item goes into the conversation after the last one (`added` when placed, `done` when final). */
function addItem(c: Conversation, item: Json) {
  const previous = c.lastItemId;
  c.lastItemId = item.id;
  send(c, 'conversation.item.added', { previous_item_id: previous, item });
  send(c, 'conversation.item.done', { previous_item_id: previous, item });
}

/** A committed buffer becomes a user audio message, transcribed at once. */
function commit(c: Conversation, config: Config) {
  const itemId = newId('item');
  send(c, 'input_audio_buffer.committed', { item_id: itemId, previous_item_id: c.lastItemId });
  addItem(c, { id: itemId, object: 'realtime.item', type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_audio', transcript: null }] });
  send(c, 'conversation.item.input_audio_transcription.completed', {
    item_id: itemId,
    content_index: 0,
    transcript: config.transcript,
    usage: { type: 'tokens', total_tokens: 20, input_tokens: 12, output_tokens: 8 },
  });
}

/**
 * Streams one scripted response, one event per turn of the event loop (or per `deltaDelayMs`), so that a
 * `response.cancel` can arrive between any two of them.
 */
function respond(c: Conversation, config: Config, params: Json) {
  const modalities: unknown = params.output_modalities ?? c.session.output_modalities;
  const text = Array.isArray(modalities) && modalities.includes('text') && !modalities.includes('audio');
  const response = {
    id: newId('resp'),
    object: 'realtime.response',
    status: 'in_progress',
    status_details: null,
    output: [] as Json[],
    conversation_id: params.conversation === 'none' ? null : c.conversationId,
    output_modalities: text ? ['text'] : ['audio'],
    metadata: params.metadata ?? null,
    usage: null as Json | null,
  };
  const item: Json = { id: newId('item'), object: 'realtime.item', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  const ref = { response_id: response.id, item_id: item.id, output_index: 0, content_index: 0 };
  let said = '';
  const part = () => (text ? { type: 'text', text: said } : { type: 'audio', transcript: said });
  const content = () => (text ? { type: 'output_text', text: said } : { type: 'output_audio', transcript: said });
  const finish = (status: 'completed' | 'cancelled') => {
    c.active = undefined;
    const final = { ...item, status: status === 'completed' ? 'completed' : 'incomplete', content: [content()] };
    send(c, 'response.done', {
      response: {
        ...response,
        status,
        status_details: status === 'cancelled' ? { type: 'cancelled', reason: 'client_cancelled' } : null,
        output: [final],
        usage: usageOf(config.usage, status === 'completed'),
      },
    });
  };

  const steps: Array<() => void> = [
    () => send(c, 'response.output_item.added', { response_id: response.id, output_index: 0, item }),
    () => send(c, 'response.content_part.added', { ...ref, part: part() }),
  ];
  config.deltas.forEach((delta, i) => {
    // A few bytes of PCM16 per chunk, distinct so a relay that reorders or drops one shows.
    if (!text) steps.push(() => send(c, 'response.output_audio.delta', { ...ref, delta: Buffer.from([i & 0xff, 0, (i + 1) & 0xff, 0]).toString('base64') }));
    steps.push(() => {
      said += delta;
      send(c, text ? 'response.output_text.delta' : 'response.output_audio_transcript.delta', { ...ref, delta });
    });
  });
  if (text) steps.push(() => send(c, 'response.output_text.done', { ...ref, text: said }));
  else {
    steps.push(() => send(c, 'response.output_audio.done', ref));
    steps.push(() => send(c, 'response.output_audio_transcript.done', { ...ref, transcript: said }));
  }
  steps.push(
    () => send(c, 'response.content_part.done', { ...ref, part: part() }),
    () => send(c, 'response.output_item.done', { response_id: response.id, output_index: 0, item: { ...item, status: 'completed', content: [content()] } }),
    () => finish('completed'),
  );

  let next = 0;
  let unschedule: (() => void) | undefined;
  const schedule = () => {
    if (config.deltaDelayMs > 0) {
      const t = setTimeout(tick, config.deltaDelayMs);
      unschedule = () => clearTimeout(t);
    } else {
      const t = setImmediate(tick);
      unschedule = () => clearImmediate(t);
    }
  };
  const tick = () => {
    unschedule = undefined;
    steps[next++]!();
    if (next < steps.length) schedule();
  };
  c.active = {
    stop: () => {
      unschedule?.();
      c.active = undefined;
    },
    cancel: () => {
      unschedule?.();
      finish('cancelled');
    },
  };
  send(c, 'response.created', { response });
  schedule();
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `session.update` patches the session: nested objects merge (so `audio.output.voice` alone keeps the format), arrays and scalars replace. */
function merge(base: Json, patch: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = isObject(v) && isObject(out[k]) ? merge(out[k], v) : v;
  return out;
}
