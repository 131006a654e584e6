import { anthropic, type GatewayResponse, passThrough, type RequestContext, type StreamTranslator, streamAnswer, type UpstreamResponse } from '../../../sdk/index.js';
import { EventStreamDecoder, translateEventStream, type EventMessage } from './eventstream.js';
import { isObject } from '../../../sdk/index.js';

/**
 * Claude on Bedrock through InvokeModel (bedrock.md §7): the Anthropic
 * Messages body without `model` and `stream` (the model is in the path, the
 * operation says whether to stream) plus `anthropic_version:
 * "bedrock-2023-05-31"` and the client's betas as `anthropic_beta`. The
 * Messages front door is native here: Bedrock answers Anthropic's JSON, and
 * streams its events inside event-stream `chunk` frames (`{"bytes": base64}`),
 * which are unwrapped into Anthropic's SSE.
 */

type Json = Record<string, unknown>;

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Whether a Bedrock model id is an Anthropic model (`anthropic.claude-…`, `us.anthropic.…`, an ARN naming one). */
export function isAnthropicModelId(model: string): boolean {
  return /(^|[./:])anthropic\.|claude/i.test(model);
}

/** The InvokeModel body of a Messages request. */
export function toInvokeMessages(body: Json, beta: string | undefined): Json {
  const { model: _model, stream: _stream, ...rest } = body;
  const out: Json = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  const betas = anthropic.platformBetas(beta);
  if (betas !== undefined && out.anthropic_beta === undefined) out.anthropic_beta = betas.split(',');
  return out;
}

const event = (type: string, json: string) => `event: ${type}\ndata: ${json}\n\n`;

/**
 * InvokeModelWithResponseStream's frames → Anthropic SSE, incrementally: each
 * `chunk` frame's decoded bytes are one Anthropic event, sent as it is under
 * its own name; an exception frame or a corrupt stream becomes Anthropic's
 * `error` event and ends the stream.
 */
export function invokeStreamTranslator(): StreamTranslator {
  const decoder = new EventStreamDecoder();
  let closed = false;
  let stopped = false;
  const fail = (type: string, message: string): string => {
    closed = true;
    return event('error', JSON.stringify(anthropic.anthropicErrorBody(500, message, type)));
  };
  const handle = (m: EventMessage): string => {
    if (closed) return '';
    const kind = m.headers[':message-type'];
    if (kind === 'exception' || kind === 'error') {
      let message = m.headers[':error-message'] ?? 'The upstream stream failed.';
      try {
        const payload = JSON.parse(m.payload) as Json;
        if (typeof payload.message === 'string' && payload.message !== '') message = payload.message;
      } catch {
        /* the header's message stands */
      }
      const name = m.headers[':exception-type'] ?? m.headers[':error-code'] ?? '';
      return fail(/Throttling|ModelNotReady|ServiceUnavailable/.test(name) ? 'overloaded_error' : 'api_error', message);
    }
    if (kind !== 'event' || m.headers[':event-type'] !== 'chunk') return '';
    let json: string;
    let type: unknown;
    try {
      const payload = JSON.parse(m.payload) as Json;
      json = Buffer.from(String(payload.bytes ?? ''), 'base64').toString('utf8');
      type = (JSON.parse(json) as Json).type;
    } catch {
      return fail('api_error', 'The upstream sent a stream chunk that is not an Anthropic event.');
    }
    if (typeof type !== 'string') return '';
    if (type === 'message_stop') stopped = true;
    return event(type, json);
  };
  return {
    push(chunk) {
      if (closed) return '';
      return translateEventStream(decoder, chunk, handle, (reason) => fail('api_error', `The upstream event stream is corrupt: ${reason}`));
    },
    end() {
      if (closed || stopped) return '';
      return fail('api_error', 'The upstream stream ended before the message was complete.');
    },
  };
}

/** The answer of InvokeModel for Claude: JSON passed through with its usage read; a stream unwrapped into Anthropic's SSE. */
export function invokeMessagesAnswer(upstream: UpstreamResponse, ctx: RequestContext, stream: boolean): GatewayResponse {
  if (stream) {
    const response = streamAnswer(upstream, invokeStreamTranslator());
    response.observers = [anthropic.anthropicUsageObserver(ctx, true)];
    return response;
  }
  const response = passThrough(upstream);
  response.observers = [anthropic.anthropicUsageObserver(ctx, false)];
  return response;
}

