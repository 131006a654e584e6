import { createRequire } from 'node:module';
import type { EventStreamCodec } from '@smithy/eventstream-codec';
import type { Message, MessageHeaders } from '@smithy/types';

/**
 * `application/vnd.amazon.eventstream` framing (bedrock.md §5a), decoded
 * incrementally: bytes are buffered until a whole message (its 4-byte total
 * length) is in, and each message is decoded by `@smithy/eventstream-codec`,
 * which checks the prelude and message CRC32s. The codec's own `feed` needs
 * whole messages, hence this framer in front of it.
 */

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();
const require = createRequire(import.meta.url);
let shared: EventStreamCodec | null = null;
/** The codec, loaded on first use: a gateway that never streams from Bedrock never holds the library. */
export function codec(): EventStreamCodec {
  if (shared === null) {
    const { EventStreamCodec: Codec } = require('@smithy/eventstream-codec') as typeof import('@smithy/eventstream-codec');
    shared = new Codec(
      (bytes: Uint8Array) => utf8Decoder.decode(bytes),
      (text: string) => utf8Encoder.encode(text),
    );
  }
  return shared;
}

/** Smallest message: prelude (8) + prelude CRC (4) + message CRC (4). */
const MIN_MESSAGE = 16;
/** Largest message accepted (AWS's limit is 16 MiB of payload plus headers). */
export const MAX_MESSAGE = 24 * 1024 * 1024;

/** A decoded message: string headers and the UTF-8 payload. */
export interface EventMessage {
  headers: Record<string, string>;
  payload: string;
}

/** A framing or checksum error: the stream cannot be trusted past it. */
export class EventStreamError extends Error {
  override readonly name = 'EventStreamError';
}

function stringHeaders(headers: MessageHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, header] of Object.entries(headers)) {
    if (header.type === 'string') out[name] = header.value;
  }
  return out;
}

/** Encodes one message (mocks and tests): string headers and a UTF-8 payload. */
export function encodeMessage(headers: Record<string, string>, payload: string): Uint8Array {
  const h: MessageHeaders = {};
  for (const [name, value] of Object.entries(headers)) h[name] = { type: 'string', value };
  return codec().encode({ headers: h, body: utf8Encoder.encode(payload) } as Message);
}

/** Buffers bytes and yields whole, CRC-checked messages, however the bytes are cut. */
export class EventStreamDecoder {
  #chunks: Buffer[] = [];
  #size = 0;

  /** Feeds bytes; returns the messages they completed. Throws EventStreamError on a bad length or CRC. */
  push(chunk: Buffer): EventMessage[] {
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#size += chunk.length;
    }
    const out: EventMessage[] = [];
    while (this.#size >= 4) {
      const head = this.#chunks[0]!.length >= 4 ? this.#chunks[0]! : this.#flatten();
      const total = head.readUInt32BE(0);
      if (total < MIN_MESSAGE || total > MAX_MESSAGE) throw new EventStreamError(`Invalid event-stream message length ${total}.`);
      if (this.#size < total) break;
      const buffer = this.#flatten();
      const frame = buffer.subarray(0, total);
      const rest = buffer.subarray(total);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#size = rest.length;
      let message: Message;
      try {
        message = codec().decode(frame);
      } catch (err) {
        throw new EventStreamError((err as Error).message);
      }
      out.push({ headers: stringHeaders(message.headers), payload: utf8Decoder.decode(message.body) });
    }
    return out;
  }

  /** Bytes held that do not yet make a whole message. */
  get pending(): number {
    return this.#size;
  }

  #flatten(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#size)];
    return this.#chunks[0]!;
  }
}

/**
 * What a stream translator makes of one chunk: the chunk's whole messages decoded and each one's output
 * (`handle`) joined, or `corrupt` with the decoder's reason when the bytes are not an event stream.
 */
export function translateEventStream(decoder: EventStreamDecoder, chunk: Buffer, handle: (message: EventMessage) => string, corrupt: (reason: string) => string): string {
  let messages: EventMessage[];
  try {
    messages = decoder.push(chunk);
  } catch (err) {
    if (err instanceof EventStreamError) return corrupt(err.message);
    throw err;
  }
  let out = '';
  for (const m of messages) out += handle(m);
  return out;
}
