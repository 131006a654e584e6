import { performance } from 'node:perf_hooks';
import WebSocket, { type RawData, type WebSocketServer } from 'ws';
import { addUsage, baseURL, checkWebSocketHandshake, forwardHeaders, GatewayError, type GatewayResponse, type GuardrailLists, type GuardrailRunner, type PluginAPI, type RequestContext, type Target, type Usage, type UpstreamRequest } from '../../sdk/index.js';
import { GUARD_READS, SessionGuard, TEXT_DONES } from './guard.js';
import { realtimeUsage } from './usage.js';

type Json = Record<string, unknown>;

/** Bytes one side may hold unsent before the relay stops reading the other side (backpressure both ways). */
const HIGH_WATER = 1024 * 1024;
/** Characters of transcript a session's log entry keeps (body capture still decides whether it is stored). */
const TRANSCRIPT_CHARS = 64 * 1024;
/** Close codes a peer may not send (RFC 6455 §7.4.1): a relayed one becomes a plain or an error close. */
const RESERVED_CLOSE = new Set([1004, 1005, 1006, 1015]);

export interface SessionOptions {
  api: PluginAPI;
  wss: WebSocketServer;
  maxSessionMs: number;
  maxFrameBytes: number;
  /** The usage-limit charge of the `limits` plugin, when loaded. */
  charge: ((ctx: RequestContext, used: Usage) => Promise<GatewayError | null>) | null;
  /** The guardrails plugin's runner, when loaded: the config's hooks run on the session's messages. */
  guardrails: GuardrailRunner | null;
  /** The session configuration a client secret was minted with, applied first. */
  minted: (ctx: RequestContext) => Json | null;
  /** Sessions open now (drain closes them). */
  open: Set<Relay>;
  draining: () => boolean;
}

/**
 * One leaf of the realtime route (its `local`): opens the provider's realtime socket with the target's credentials,
 * then takes the client's socket and relays events both ways until either side ends. A refused upstream handshake
 * is the leaf's answer (its status and error body), so a fallback goes on to the next target and the client gets a
 * plain HTTP error. Resolves when the session is over, with its summary as the answer the log keeps.
 */
export async function connectRealtime(ctx: RequestContext, target: Target, o: SessionOptions): Promise<GatewayResponse> {
  const upgrade = ctx.upgrade;
  if (upgrade === null) {
    throw new GatewayError('invalid_request', `GET ${ctx.path} is the Realtime API's WebSocket: connect with a WebSocket client (Upgrade: websocket).`, { param: 'upgrade' });
  }
  // Checked before the provider is called: a handshake the WebSocket server would refuse must not open a provider socket.
  checkWebSocketHandshake(ctx);
  checkSubprotocols(ctx);
  const provider = ctx.provider!;
  const format = provider.resources?.realtime;
  if (format === undefined) {
    const able = o.api.providers.names().filter((n) => o.api.providers.get(n)?.resources?.realtime !== undefined);
    throw new GatewayError('route_not_supported', `Provider "${provider.name}" has no Realtime API; providers that have one: ${able.join(', ')}.`, { param: 'x-gateway-provider' });
  }
  const model = upstreamModel(ctx, target);
  const url = provider.resources?.realtimeUrl !== undefined ? provider.resources.realtimeUrl(model, target, ctx) : `${baseURL(target, provider, ctx)}/realtime?model=${encodeURIComponent(model)}`;
  o.api.upstream.checkUrl(url);
  const headers = provider.authHeaders(target, ctx);
  const forward = target.forward_headers;
  if (Array.isArray(forward)) forwardHeaders(ctx, forward as string[], headers);
  if (ctx.upstreamHeaders !== null) Object.assign(headers, ctx.upstreamHeaders);
  const request: UpstreamRequest = { method: 'GET', url, headers, body: null };
  if (provider.prepare !== undefined) await provider.prepare(request, target, ctx);

  const started = performance.now();
  const attempt = { target: ctx.targetPath ?? '0', provider: provider.name, status: null as number | null, startMs: started - ctx.startedAt, latencyMs: 0, error: null as string | null };
  ctx.attempts.push(attempt);
  // The handshake is bounded by the attempt's signal (request_timeout, the request's deadline, the client leaving).
  const opened = await openUpstream(request, o, ctx.attemptSignal ?? ctx.signal);
  attempt.latencyMs = performance.now() - started;
  ctx.upstreamLatencyMs = attempt.latencyMs;
  if (opened.kind === 'refused') {
    attempt.status = opened.status;
    return { status: opened.status, headers: { 'content-type': 'application/json' }, body: opened.body, observers: null };
  }
  if (opened.kind === 'failed') {
    attempt.error = opened.error.code;
    throw opened.error;
  }
  attempt.status = 101;
  const upstream = opened.socket;
  // The client went away while the provider's socket opened: nothing to relay.
  if (ctx.clientGone || upgrade.socket.destroyed) {
    upstream.terminate();
    throw new GatewayError('client_closed_request', 'The client closed the connection before the session opened.');
  }
  upgrade.taken = true;
  const client = await takeSocket(upgrade, o.wss);
  if (client === null) {
    upstream.terminate();
    ctx.aborted = true;
    throw new GatewayError('client_closed_request', 'The client closed the connection before the session opened.');
  }
  ctx.firstByteMs = performance.now() - ctx.startedAt;
  const relay = new Relay(ctx, client, upstream, model, o, opened.early);
  o.open.add(relay);
  if (o.draining()) relay.end('drain');
  const minted = o.minted(ctx);
  if (minted !== null) relay.toUpstream(JSON.stringify({ type: 'session.update', session: minted }));
  const summary = await relay.done;
  o.open.delete(relay);
  ctx.usage = relay.usage;
  if (relay.error !== null) ctx.error = relay.error;
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(summary), observers: null };
}

/** What a subprotocol may be: an HTTP token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Throws the 400 for subprotocols the WebSocket server would refuse (not tokens, or one named twice). */
function checkSubprotocols(ctx: RequestContext): void {
  const offered = ctx.header('sec-websocket-protocol');
  if (offered === undefined) return;
  const list = offered.split(',').map((p) => p.trim());
  if (list.some((p) => !TOKEN.test(p)) || new Set(list).size !== list.length) {
    throw new GatewayError('invalid_request', 'Sec-WebSocket-Protocol must list distinct subprotocol tokens.', { param: 'sec-websocket-protocol' });
  }
}

/** How long the WebSocket server may take to answer a handshake it accepted before the client is taken as gone. */
const TAKE_MS = 10_000;

/**
 * The client's WebSocket, once the server answered the handshake; null when the client left first (a FIN or a reset
 * while it was answered), so the provider's socket is closed and the session logged, never left waiting.
 */
function takeSocket(upgrade: NonNullable<RequestContext['upgrade']>, wss: WebSocketServer): Promise<WebSocket | null> {
  return new Promise((resolve) => {
    const socket = upgrade.socket;
    let done = false;
    const finish = (ws: WebSocket | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.off('close', gone);
      socket.off('end', gone);
      if (ws === null) socket.destroy();
      resolve(ws);
    };
    const gone = () => finish(null);
    const timer = setTimeout(gone, TAKE_MS);
    socket.once('close', gone);
    socket.once('end', gone);
    wss.handleUpgrade(upgrade.req, socket, upgrade.head, (ws) => finish(ws));
  });
}

/** The model the provider is asked for: the target's override, else the client's `model` (a `@slug/` prefix dropped). */
function upstreamModel(ctx: RequestContext, target: Target): string {
  const override = (target.override_params as Json | undefined)?.model;
  if (typeof override === 'string' && override !== '') return override;
  const model = ctx.model ?? '';
  const slash = model.startsWith('@') ? model.indexOf('/') : -1;
  return slash === -1 ? model : model.slice(slash + 1);
}

type Opened = { kind: 'open'; socket: WebSocket; early: Early } | { kind: 'refused'; status: number; body: string } | { kind: 'failed'; error: GatewayError };

/** What the provider sent before the relay took over (its `session.created` comes at once), and the listener keeping it. */
interface Early {
  frames: Array<{ data: RawData; binary: boolean }>;
  listener: (data: RawData, binary: boolean) => void;
}

/** Opens the provider's socket through the gateway's host policy (every connection the gateway opens is checked). */
function openUpstream(request: UpstreamRequest, o: SessionOptions, signal: AbortSignal): Promise<Opened> {
  const secure = request.url.startsWith('https:');
  const wsUrl = (secure ? 'wss:' : 'ws:') + request.url.slice(secure ? 6 : 5);
  const origin = new URL(request.url).origin;
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, {
      headers: request.headers,
      perMessageDeflate: false,
      maxPayload: o.maxFrameBytes * 4,
      handshakeTimeout: o.api.options.upstreamHeadersTimeoutMs,
      createConnection: ((options: { hostname?: string; host?: string; port?: number | string; servername?: string }, done: (err: Error | null, s: unknown) => void) => {
        o.api.upstream.connect({ hostname: options.hostname ?? options.host ?? '', port: options.port ?? (secure ? 443 : 80), protocol: secure ? 'https:' : 'http:', ...(options.servername === undefined ? {} : { servername: options.servername }) }, done);
        return undefined;
      }) as never,
    });
    let settled = false;
    const settle = (value: Opened) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', stop);
      resolve(value);
    };
    const stop = () => {
      const reason: unknown = signal.reason;
      settle({ kind: 'failed', error: reason instanceof GatewayError ? reason : new GatewayError('client_closed_request', 'The client closed the connection before the session opened.') });
      socket.terminate();
    };
    if (signal.aborted) queueMicrotask(stop);
    else signal.addEventListener('abort', stop, { once: true });
    socket.once('open', () => {
      const early: Early = { frames: [], listener: (data, binary) => early.frames.push({ data, binary }) };
      socket.on('message', early.listener);
      settle({ kind: 'open', socket, early });
    });
    socket.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < 65_536) chunks.push(c);
        size += c.length;
      });
      const done = () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body = text;
        try {
          JSON.parse(text);
        } catch {
          body = JSON.stringify({ error: { message: `The provider refused the realtime session (HTTP ${res.statusCode}).`, type: res.statusCode! >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } });
        }
        settle({ kind: 'refused', status: res.statusCode ?? 502, body });
        socket.terminate();
      };
      res.once('end', done);
      res.once('error', done);
    });
    // `on`, not `once`: a socket ended while connecting may report more than one error, and an unheard one would end the process.
    socket.on('error', (err: Error & { code?: string }) => {
      const known = err instanceof GatewayError ? err : null;
      settle({ kind: 'failed', error: known ?? new GatewayError('upstream_unreachable', `The upstream at ${origin} is unreachable${err.code === undefined ? '' : ` (${err.code})`}.`, { cause: err }) });
    });
  });
}

/** What a session's log entry says of it (its answer body). */
interface SessionSummary {
  object: 'realtime.session';
  model: string;
  id: string | null;
  duration_ms: number;
  closed_by: 'client' | 'provider' | 'gateway';
  close_code: number;
  reason: string | null;
  responses: number;
  events: { client: Record<string, number>; provider: Record<string, number> };
  usage: Usage | null;
  /** Guardrail checks run on the session's messages, and how many denied. */
  guardrails: { checked: number; denied: number } | null;
  transcript: Array<{ role: 'user' | 'assistant'; text: string }>;
}

/** One session: the client's socket and the provider's, events relayed both ways in order, with backpressure. */
export class Relay {
  readonly done: Promise<SessionSummary>;
  usage: Usage | null = null;
  error: GatewayError | null = null;
  readonly #ctx: RequestContext;
  readonly #client: WebSocket;
  readonly #upstream: WebSocket;
  readonly #o: SessionOptions;
  readonly #events = { client: {} as Record<string, number>, provider: {} as Record<string, number> };
  readonly #transcript: Array<{ role: 'user' | 'assistant'; text: string }> = [];
  #transcriptChars = 0;
  #model: string;
  #sessionId: string | null = null;
  #responses = 0;
  #ended = false;
  #closedBy: SessionSummary['closed_by'] = 'client';
  #closeCode = 1000;
  #reason: string | null = null;
  readonly #guard: SessionGuard | null;
  /** Provider events waiting for an output hook's verdict on one before them. */
  #upstreamChain: Promise<void> = Promise.resolve();
  /** Client events waiting for an input hook's verdict on one before them, and how many. */
  #clientChain: Promise<void> = Promise.resolve();
  #clientWaiting = 0;
  /** Usage charges run one after another, in the order the responses ended. */
  #charging: Promise<void> = Promise.resolve();
  readonly #timer: NodeJS.Timeout;
  #finish!: (s: SessionSummary) => void;

  constructor(ctx: RequestContext, client: WebSocket, upstream: WebSocket, model: string, o: SessionOptions, early: Early) {
    this.#ctx = ctx;
    this.#client = client;
    this.#upstream = upstream;
    this.#model = model;
    this.#o = o;
    this.done = new Promise((resolve) => (this.#finish = resolve));
    const lists = ctx.target as GuardrailLists | null;
    const guard = o.guardrails === null || lists === null ? null : new SessionGuard(ctx, o.guardrails, lists, {
      cancelResponse: (id) => this.#send(this.#upstream, this.#client, JSON.stringify(id === null ? { type: 'response.cancel' } : { type: 'response.cancel', response_id: id })),
      deleteItem: (itemId) => this.#send(this.#upstream, this.#client, JSON.stringify({ type: 'conversation.item.delete', item_id: itemId })),
      tell: (error) => this.#tell(error),
    });
    this.#guard = guard !== null && (guard.input || guard.output) ? guard : null;
    this.#timer = setTimeout(() => {
      const minutes = Math.round(o.maxSessionMs / 60_000);
      this.#errorEvent('invalid_request_error', 'session_expired', `Your session hit the maximum duration of ${minutes} minutes.`);
      this.end('gateway', 1000, 'session expired');
    }, o.maxSessionMs);
    this.#timer.unref();

    client.on('message', (data, binary) => this.#fromClient(data, binary));
    upstream.off('message', early.listener);
    for (const f of early.frames) this.#fromUpstream(f.data, f.binary);
    upstream.on('message', (data, binary) => this.#fromUpstream(data, binary));
    client.on('close', (code, reason) => this.end('client', code, reason.toString()));
    // The provider's last events may still wait for a check (its response.done, its error): they go out first.
    upstream.on('close', (code, reason) => void this.#flushed().then(() => this.end('provider', code, reason.toString())));
    client.on('error', () => this.end('client', 1006, null));
    upstream.on('error', () => this.end('provider', 1011, 'upstream error'));
  }

  /** Sends a text frame to the provider (the session configuration a client secret carries). */
  toUpstream(text: string): void {
    this.#send(this.#upstream, this.#client, text);
  }

  /** Ends the session: both sockets closed, the summary resolved. `drain`: the gateway is shutting down. */
  end(by: SessionSummary['closed_by'] | 'drain', code = 1001, reason: string | null = 'the gateway is shutting down'): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#closedBy = by === 'drain' ? 'gateway' : by;
    this.#closeCode = code;
    this.#reason = reason === '' ? null : reason;
    const relayed = RESERVED_CLOSE.has(code) ? (code === 1005 ? 1000 : 1011) : code;
    for (const ws of [this.#client, this.#upstream]) {
      if (ws.readyState === WebSocket.OPEN) ws.close(relayed, (reason ?? '').slice(0, 120));
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    }
    // A peer that never answers the close is cut after a second.
    setTimeout(() => {
      this.#client.terminate();
      this.#upstream.terminate();
    }, 1000).unref();
    void this.#charging.finally(() =>
      this.#finish({
        object: 'realtime.session',
        model: this.#model,
        id: this.#sessionId,
        duration_ms: Math.round(performance.now() - this.#ctx.startedAt),
        closed_by: this.#closedBy,
        close_code: this.#closeCode,
        reason: this.#reason,
        responses: this.#responses,
        events: this.#events,
        usage: this.usage,
        guardrails: this.#guard === null ? null : { checked: this.#guard.checked, denied: this.#guard.denied },
        transcript: this.#transcript,
      }),
    );
  }

  /** Provider events still waiting for a check, at most two seconds. */
  #flushed(): Promise<void> {
    return Promise.race([this.#upstreamChain, new Promise<void>((r) => setTimeout(r, 2000).unref())]);
  }

  #fromClient(data: RawData, binary: boolean): void {
    const text = binary ? Buffer.from(data as Buffer).toString('utf8') : String(data);
    const guard = this.#guard;
    if (guard === null || !guard.input) {
      count(this.#events.client, typeOf(text));
      this.#send(this.#upstream, this.#client, text);
      return;
    }
    // Input hooks: each event is read whole (its type may come after the words it carries), a user's words wait for
    // their verdict, and the events after them wait behind them, in order; the client is not read while many wait.
    const event = parse(text);
    count(this.#events.client, event !== null && typeof event.type === 'string' ? event.type.slice(0, 64) : '(invalid)');
    if (++this.#clientWaiting >= CLIENT_WAITING_MAX && !this.#client.isPaused) this.#client.pause();
    this.#clientChain = this.#clientChain.then(async () => {
      const refused = await guard.clientEvent(event);
      if (refused === null) this.#send(this.#upstream, this.#client, text);
      else this.#tell(refused);
      if (--this.#clientWaiting < CLIENT_WAITING_MAX / 2 && this.#client.isPaused && this.#upstream.bufferedAmount < HIGH_WATER) this.#client.resume();
    });
  }

  #fromUpstream(data: RawData, binary: boolean): void {
    const text = binary ? Buffer.from(data as Buffer).toString('utf8') : String(data);
    const type = typeOf(text);
    count(this.#events.provider, type);
    const guard = this.#guard;
    const guarded = guard !== null && guard.output;
    const event = READ.has(type) || (guarded && GUARD_READS.has(type)) ? parse(text) : null;
    if (guarded) {
      const head = text.length > 256 ? text.slice(0, 256) : text;
      const id = type === 'response.done' || type === 'response.created' ? (((event ?? parse(text))?.response as Json | undefined)?.id as string | undefined) ?? null : (RESPONSE_AT_HEAD.exec(head)?.[1] ?? null);
      // Relayed in order behind any event waiting for a check; a response a hook denied keeps the rest of its events.
      const out = guard.providerEvent(type, id, event, text);
      this.#upstreamChain = this.#upstreamChain.then(async () => {
        const sent = await out;
        if (sent !== null) this.#send(this.#client, this.#upstream, sent);
      });
    }
    if (guard !== null && type === 'conversation.item.input_audio_transcription.completed' && event !== null) guard.userTranscript(event);
    if (event !== null) {
      if (type === 'session.created' || type === 'session.updated') {
        const session = event.session as Json | undefined;
        if (typeof session?.model === 'string') this.#model = session.model;
        if (typeof session?.id === 'string') this.#sessionId ??= session.id;
      } else if (type === 'response.done') {
        this.#responseDone(event);
      } else if (type === 'conversation.item.input_audio_transcription.completed' && typeof event.transcript === 'string') {
        this.#keep('user', event.transcript);
      } else if ((type === 'response.output_audio_transcript.done' || type === 'response.audio_transcript.done') && typeof event.transcript === 'string') {
        this.#keep('assistant', event.transcript);
      } else if ((type === 'response.output_text.done' || type === 'response.text.done') && typeof event.text === 'string') {
        this.#keep('assistant', event.text);
      }
    }
    if (!guarded) this.#send(this.#client, this.#upstream, text);
  }

  #responseDone(event: Json): void {
    this.#responses++;
    const used = realtimeUsage((event.response as Json | undefined)?.usage);
    if (used === null) return;
    this.usage = this.usage === null ? used : addUsage(this.usage, used);
    const charge = this.#o.charge;
    if (charge === null) return;
    const total = this.usage;
    this.#charging = this.#charging.then(async () => {
      const refused = await charge(this.#ctx, total).catch(() => null);
      if (refused === null || this.#ended) return;
      // The budget ran out: the client hears why in the Realtime API's own error event, then the session ends.
      this.error = refused;
      this.#errorEvent(refused.type, refused.code, refused.message);
      this.end('gateway', 1008, 'usage limit reached');
    });
  }

  #keep(role: 'user' | 'assistant', text: string): void {
    if (this.#transcriptChars >= TRANSCRIPT_CHARS) return;
    const kept = text.slice(0, TRANSCRIPT_CHARS - this.#transcriptChars);
    this.#transcriptChars += kept.length;
    this.#transcript.push({ role, text: kept });
  }

  /** A gateway error (a guardrail's denial) as the Realtime API's `error` event. */
  #tell(error: GatewayError): void {
    this.#errorEvent(error.type, error.code, error.message);
  }

  /** An `error` event as the Realtime API sends one, to the client. */
  #errorEvent(type: string, code: string, message: string): void {
    if (this.#client.readyState !== WebSocket.OPEN) return;
    this.#client.send(JSON.stringify({ type: 'error', event_id: `event_gw_${Date.now().toString(36)}`, error: { type, code, message, param: null, event_id: null } }));
  }

  /** Sends to `to`; while it holds more than the high-water mark unsent, `from` is not read. */
  #send(to: WebSocket, from: WebSocket, text: string): void {
    if (to.readyState !== WebSocket.OPEN) return;
    to.send(text, () => {
      if (to.bufferedAmount < HIGH_WATER / 2 && from.isPaused) from.resume();
    });
    if (to.bufferedAmount >= HIGH_WATER && !from.isPaused) from.pause();
  }
}

/** Provider events whose content the relay reads (the rest it only counts, by the type at the head of the frame). */
const READ: ReadonlySet<string> = new Set([
  'session.created',
  'session.updated',
  'response.done',
  'conversation.item.input_audio_transcription.completed',
  ...TEXT_DONES,
]);
/** The type when it is the event's first key (as OpenAI's events and SDKs write it); else the event is parsed. */
const TYPE_AT_HEAD = /^\s*\{\s*"type"\s*:\s*"([^"\\]{1,64})"/;
/** Client events that may wait for an input hook before the client is read no more. */
const CLIENT_WAITING_MAX = 64;
const RESPONSE_AT_HEAD = /"response_id"\s*:\s*"([^"\\]{1,128})"/;

/**
 * An event's type, read from the head of its frame without parsing the rest (an audio frame carries up to megabytes
 * of base64 after it); a frame whose head holds no type is parsed to find it.
 */
function typeOf(text: string): string {
  const found = TYPE_AT_HEAD.exec(text.length > 256 ? text.slice(0, 256) : text);
  if (found !== null) return found[1]!;
  const event = parse(text);
  return event !== null && typeof event.type === 'string' ? event.type.slice(0, 64) : '(invalid)';
}

function parse(text: string): Json | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

/** Counts an event by its type (`(invalid)` for a frame that is not a JSON event). */
function count(into: Record<string, number>, type: string): void {
  // Bounded: a client making up event types cannot grow the log entry without end.
  if (into[type] !== undefined || Object.keys(into).length < 100) into[type] = (into[type] ?? 0) + 1;
}
