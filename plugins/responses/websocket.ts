import type { Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { Agent, request } from 'undici';
import { WebSocketServer, type WebSocket } from 'ws';
import { checkWebSocketHandshake, GatewayError, isForwardable, isObject, responses, SSEParser, type GatewayResponse, type PluginAPI, type RequestContext } from '../../sdk/index.js';
import { rawInput } from './conversation.js';
import { responsesError } from './errors.js';

type Json = Record<string, unknown>;

/** What the WebSocket mode needs to know. */
export interface WebSocketOptions {
  /** `POST …/responses` as the gateway serves it (the base path included). */
  path: string;
  /** A socket is closed after this long (OpenAI's own limit is 60 minutes), with the error OpenAI sends then. */
  maxConnectionMs: number;
  /** Largest frame a client may send, in bytes (the gateway's body limit). */
  maxFrameBytes: number;
}

/** Events that end a response: the next `response.create` on the socket starts after one of them. */
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);
/**
 * Handshake headers never copied onto a message, besides those no proxy forwards (`isForwardable`: hop-by-hop,
 * `host`, `content-length`, `expect`, `proxy-*`): what describes the socket or the message's own body and answer.
 */
const SOCKET_HEADERS = new Set(['accept-encoding', 'accept', 'content-type', 'content-encoding', 'http2-settings']);
/** Bytes a socket may hold unsent before the relay waits for the client to read. */
const HIGH_WATER = 1024 * 1024;
/** Messages a socket may have waiting behind the response running now; more are refused (`too_many_pending_responses`). */
const MAX_PENDING = 16;
/** A lane name (`stream_id`): what OpenAI accepts. */
const LANE = /^[A-Za-z0-9_.-]{1,256}$/;
/** Rate-limit and retry headers of a refused response, passed on in the error event's `headers` (as OpenAI does). */
const ERROR_HEADERS = /^(?:retry-after(?:-ms)?|x-ratelimit-.+)$/;

/**
 * The Responses API's WebSocket mode (docs/formats.md, "WebSocket mode"): `GET /v1/responses` upgraded after the
 * gateway's auth and scope, then one response per `response.create` message, in order, its events sent as the SSE
 * stream's objects, one per frame. Each message runs as a request of its own through the whole gateway (a POST to
 * the listener the socket came in on, with the handshake's headers): routing, limits, guardrails, the cache, the log
 * and every provider, native or translated, exactly as over HTTP. A `store: false` response is kept on the socket
 * (as OpenAI does) so the next message may name it in `previous_response_id`.
 */
export function responsesWebSocket(api: PluginAPI, opts: WebSocketOptions) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxFrameBytes, perMessageDeflate: false });
  // No bound on connections: each socket's message holds one while its response runs (a slow client holds it longer),
  // and a shared bound would let one caller's sockets stall everyone's. The timeouts are the upstream's own.
  const self = new Agent({ connections: null, keepAliveTimeout: 10_000, headersTimeout: api.options.upstreamHeadersTimeoutMs, bodyTimeout: api.options.upstreamBodyTimeoutMs });
  const open = new Set<Session>();
  let draining = false;

  api.onDrain(() => {
    draining = true;
    for (const s of open) s.drain();
  });
  api.onClose(async () => {
    for (const s of open) s.terminate();
    await self.destroy().catch(() => undefined);
  });

  /** The handler of `GET …/responses`: takes a WebSocket upgrade; a plain GET learns it needs one. */
  return (ctx: RequestContext): GatewayResponse => {
    const upgrade = ctx.upgrade;
    if (upgrade === null || (ctx.header('upgrade') ?? '').toLowerCase() !== 'websocket') {
      throw responsesError('upgrade_required', `GET ${opts.path} is the Responses API's WebSocket mode: upgrade to a WebSocket, or POST a response.`, { headers: { upgrade: 'websocket', connection: 'Upgrade' } });
    }
    const socket = upgrade.socket as Socket & { encrypted?: boolean };
    // Each message is POSTed to the listener the socket came in on: a plain TCP one (the bundled server's kind).
    if (socket.encrypted === true || socket.localPort === undefined || socket.localAddress === undefined) {
      throw new GatewayError('service_unavailable', 'The WebSocket mode needs the gateway served by a plain TCP HTTP listener (node:http), which this one is not.');
    }
    checkWebSocketHandshake(ctx);
    const host = socket.localAddress;
    const origin = `http://${host.includes(':') ? `[${host}]` : host}:${socket.localPort}`;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(ctx.headers)) {
      if (value === undefined || !isForwardable(name) || SOCKET_HEADERS.has(name) || name.startsWith('sec-websocket-')) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    headers['content-type'] = 'application/json';
    headers.accept = 'text/event-stream';
    upgrade.taken = true;
    wss.handleUpgrade(upgrade.req, upgrade.socket, upgrade.head, (ws) => {
      const s = new Session(ws, { url: `${origin}${opts.path}`, headers, agent: self, maxConnectionMs: opts.maxConnectionMs, maxPendingBytes: opts.maxFrameBytes, log: ctx.log }, () => open.delete(s));
      open.add(s);
      if (draining) s.drain();
    });
    return { status: 101, headers: {}, body: null, observers: null };
  };
}


interface SessionOptions {
  url: string;
  headers: Record<string, string>;
  agent: Agent;
  maxConnectionMs: number;
  /** Bytes of messages that may wait behind the running one (the size of one frame at most). */
  maxPendingBytes: number;
  log: RequestContext['log'];
}

/** One client's socket: its messages answered one after another. */
class Session {
  readonly #ws: WebSocket;
  readonly #o: SessionOptions;
  #queue: Promise<void> = Promise.resolve();
  #busy = 0;
  /** Bytes of the messages waiting (not the one running). */
  #pendingBytes = 0;
  #draining = false;
  #inFlight: AbortController | null = null;
  /** The lane of the response running now (for an error that ends the socket mid-response). */
  #lane: string | null = null;
  /** The last response made with `store: false`: its id and the conversation up to it, for the next message to continue. */
  #local: { id: string; items: Json[] } | null = null;
  readonly #limit: NodeJS.Timeout;

  constructor(ws: WebSocket, o: SessionOptions, gone: () => void) {
    this.#ws = ws;
    this.#o = o;
    this.#limit = setTimeout(() => {
      const minutes = Math.round(o.maxConnectionMs / 60_000);
      this.#error(this.#lane, 400, 'invalid_request_error', 'websocket_connection_limit_reached', `Responses websocket connection limit reached (${minutes} minutes). Create a new websocket connection to continue.`, null);
      this.#inFlight?.abort();
      this.end(1000, 'connection limit reached');
    }, o.maxConnectionMs);
    this.#limit.unref();
    ws.on('message', (data, binary) => {
      const text = binary ? Buffer.from(data as Buffer).toString('utf8') : String(data);
      // One response runs at a time; a few may wait behind it (in number and in bytes). More would only grow the gateway's memory.
      if (this.#busy > MAX_PENDING || (this.#busy > 0 && this.#pendingBytes + text.length > o.maxPendingBytes)) {
        this.#error(null, 400, 'invalid_request_error', 'too_many_pending_responses', `Too many responses are waiting on this socket (at most ${MAX_PENDING}, and one frame's size): wait for one to end before sending more.`, null);
        return;
      }
      const waits = this.#busy > 0 ? text.length : 0;
      this.#pendingBytes += waits;
      this.#busy++;
      this.#queue = this.#queue.then(() => {
        this.#pendingBytes -= waits;
        return this.#handle(text);
      }).finally(() => {
        this.#busy--;
        if (this.#draining && this.#busy === 0) this.end(1001, 'The gateway is shutting down.');
      });
    });
    ws.on('error', (err) => o.log.debug({ err }, 'responses websocket: socket error'));
    ws.on('close', () => {
      clearTimeout(this.#limit);
      this.#inFlight?.abort();
      gone();
    });
  }

  /** Ends the socket once the response running now (if any) is done. */
  drain(): void {
    this.#draining = true;
    if (this.#busy === 0) this.end(1001, 'The gateway is shutting down.');
  }

  end(code: number, reason: string): void {
    if (this.#ws.readyState === this.#ws.OPEN || this.#ws.readyState === this.#ws.CONNECTING) this.#ws.close(code, reason);
  }

  /** At close: the running response aborted and the socket dropped without waiting for the client's close frame. */
  terminate(): void {
    this.#inFlight?.abort();
    this.#ws.terminate();
  }

  async #handle(text: string): Promise<void> {
    if (this.#ws.readyState !== this.#ws.OPEN) return;
    // Queued before the drain began: refused, not run against a gateway that is closing.
    if (this.#draining) return this.#error(null, 503, 'server_error', 'server_shutting_down', 'The gateway is shutting down: send this again on a new connection.', null);
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return this.#error(null, 400, 'invalid_request_error', 'invalid_json', 'The message is not JSON.', null);
    }
    if (!isObject(frame) || frame.type !== 'response.create') {
      const type = isObject(frame) && typeof frame.type === 'string' ? frame.type : null;
      return this.#error(null, 400, 'invalid_request_error', 'unknown_event', `Unsupported client event${type === null ? '' : ` "${type.slice(0, 64)}"`}: send response.create.`, 'type');
    }
    const { type: _type, stream: _stream, stream_id: streamId, generate, ...body } = frame;
    if (streamId !== undefined && (typeof streamId !== 'string' || !LANE.test(streamId))) {
      return this.#error(null, 400, 'invalid_request_error', 'invalid_stream_id', 'stream_id must be 1 to 256 characters of letters, digits, _, . and -.', 'stream_id');
    }
    const lane = typeof streamId === 'string' ? streamId : null;
    this.#lane = lane;
    if (body.background === true) return this.#error(lane, 400, 'invalid_request_error', 'unsupported_parameter', 'background is not supported over WebSocket.', 'background');
    // A response kept on this socket (store: false, or a warm-up): its conversation goes up as input, as the provider holds none of it.
    const local = this.#local;
    const continuesLocal = local !== null && body.previous_response_id === local.id;
    const input = rawInput(body.input);
    if (generate === false) return this.#warmUp(lane, body, continuesLocal ? [...local!.items, ...input] : input);
    if (continuesLocal) {
      body.input = [...local.items, ...input];
      delete body.previous_response_id;
    }
    body.stream = true;
    const abort = new AbortController();
    this.#inFlight = abort;
    try {
      const answer = await request(this.#o.url, { method: 'POST', headers: this.#o.headers, body: JSON.stringify(body), dispatcher: this.#o.agent, signal: abort.signal });
      const type = String(answer.headers['content-type'] ?? '');
      if (answer.statusCode < 200 || answer.statusCode >= 300 || !type.startsWith('text/event-stream')) {
        const raw = await answer.body.text();
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(answer.headers)) if (ERROR_HEADERS.test(name) && typeof value === 'string') headers[name] = value;
        return this.#refusal(lane, answer.statusCode, raw, headers);
      }
      const parser = new SSEParser();
      const decoder = new StringDecoder('utf8');
      let final: Json | null = null;
      for await (const chunk of answer.body) {
        for (const event of parser.push(decoder.write(chunk as Buffer))) {
          const out = this.#event(event.data, lane);
          if (out === null) continue;
          if (TERMINAL.has(String(out.type)) && isObject(out.response)) final = out.response;
          await this.#send(out);
        }
      }
      for (const event of parser.push(decoder.end())) {
        const out = this.#event(event.data, lane);
        if (out !== null) await this.#send(out);
      }
      if (final !== null && typeof final.id === 'string' && body.store === false) {
        const output = Array.isArray(final.output) ? (final.output as Json[]) : [];
        this.#local = { id: final.id, items: [...(continuesLocal ? (body.input as Json[]) : input), ...replayable(output)] };
      }
    } catch (err) {
      if (abort.signal.aborted) return;
      this.#o.log.warn({ err }, 'responses websocket: a response failed');
      this.#error(lane, 500, 'server_error', 'server_error', 'The gateway could not complete the response.', null);
    } finally {
      this.#inFlight = null;
    }
  }

  /**
   * `generate: false`, OpenAI's warm-up: no model is called; the response is created and completed with no output,
   * and kept on the socket with its input, so the next message naming it in `previous_response_id` starts from there.
   */
  async #warmUp(lane: string | null, body: Json, items: Json[]): Promise<void> {
    const response: Json = {
      id: responses.responseId(),
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: typeof body.model === 'string' ? body.model : null,
      output: [],
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    };
    const withLane = (e: Json) => (lane === null ? e : { ...e, stream_id: lane });
    await this.#send(withLane({ type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', usage: null } }));
    await this.#send(withLane({ type: 'response.completed', sequence_number: 1, response }));
    this.#local = { id: response.id as string, items };
  }

  /** One SSE event's object, with the lane echoed; null for what is not one (a comment, `[DONE]`). */
  #event(data: string, lane: string | null): Json | null {
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch {
      return null;
    }
    if (!isObject(value)) return null;
    if (value.type === 'error' && !isObject(value.error)) {
      // The SSE error event is flat; over a WebSocket it is nested (OpenAI's own shape).
      const { type: _t, sequence_number: seq, ...rest } = value;
      value = { type: 'error', status: 500, ...(seq === undefined ? {} : { sequence_number: seq }), error: { type: 'server_error', ...rest } };
    }
    if (lane !== null) (value as Json).stream_id = lane;
    return value as Json;
  }

  /** A refused response (an HTTP error from the gateway): OpenAI's WebSocket error event, nested, with the status. */
  #refusal(lane: string | null, status: number, raw: string, headers: Record<string, string>): void {
    let error: Json = {};
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (isObject(parsed) && isObject(parsed.error)) error = parsed.error;
    } catch {
      /* not JSON: the status says it */
    }
    const message = typeof error.message === 'string' ? error.message : `The gateway answered ${status}.`;
    this.#error(lane, status, typeof error.type === 'string' ? error.type : 'invalid_request_error', typeof error.code === 'string' ? error.code : null, message, typeof error.param === 'string' ? error.param : null, headers);
  }

  #error(lane: string | null, status: number, type: string, code: string | null, message: string, param: string | null, headers?: Record<string, string>): void {
    if (this.#ws.readyState !== this.#ws.OPEN) return;
    const error = headers === undefined || Object.keys(headers).length === 0 ? { type, code, message, param } : { type, code, message, param, headers };
    this.#ws.send(JSON.stringify({ type: 'error', status, ...(lane === null ? {} : { stream_id: lane }), error }));
  }

  /** Sends one event; waits for the client to read when the socket holds too much already (backpressure). */
  #send(event: Json): Promise<void> | void {
    if (this.#ws.readyState !== this.#ws.OPEN) return;
    const text = JSON.stringify(event);
    if (this.#ws.bufferedAmount < HIGH_WATER) {
      this.#ws.send(text);
      return;
    }
    return new Promise<void>((resolve) => this.#ws.send(text, () => resolve()));
  }
}


/** Output items as the next request's input: without ids (the provider stored none of them); reasoning only with its encrypted content. */
function replayable(output: readonly Json[]): Json[] {
  const out: Json[] = [];
  for (const item of output) {
    if (item.type === 'reasoning') {
      // Replayable only with its encrypted content, and then as it came (the API wants its id).
      if (typeof item.encrypted_content === 'string') out.push(item);
      continue;
    }
    const { id: _id, status: _status, ...rest } = item;
    out.push(rest);
  }
  return out;
}
