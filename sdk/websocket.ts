import { GatewayError, type RequestContext } from '../core/index.js';

/** A WebSocket key as RFC 6455 makes one (16 random bytes, base64). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * Throws the 400 for a WebSocket handshake the `ws` server would refuse for its key or version, before a route takes
 * the socket (and before it opens anything for it): a refusal in the gateway's envelope, not `ws`'s plain-text one.
 */
export function checkWebSocketHandshake(ctx: RequestContext): void {
  const version = ctx.header('sec-websocket-version');
  if (!WEBSOCKET_KEY.test(ctx.header('sec-websocket-key') ?? '') || (version !== '13' && version !== '8')) {
    throw new GatewayError('invalid_request', 'The WebSocket handshake is malformed (Sec-WebSocket-Key, Sec-WebSocket-Version 13).', { param: 'sec-websocket-key' });
  }
}
