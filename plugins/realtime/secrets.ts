import type { AuthInfo, SecretBox } from '../../sdk/index.js';

/**
 * Client secrets the gateway mints for browsers (`POST /v1/realtime/client_secrets`): a browser cannot set the
 * gateway key's header on a WebSocket, and must not hold the key. A secret is sealed (AES-GCM with the gateway's
 * encryption key), so it carries what it grants and nothing is kept server-side: any replica with the same key
 * accepts it, and nobody can read or change what it says.
 */

/** What a secret grants: the key that minted it, one model, until when, and the routing it was minted with. */
export interface SecretGrant {
  auth: AuthInfo;
  model: string;
  /** Epoch ms. */
  expiresAt: number;
  /** The minting request's routing headers (`x-gateway-*`, a provider credential): the session is routed as it would have been. */
  headers: Record<string, string>;
  /** The session configuration given at minting, applied when the session opens (as OpenAI applies a client secret's). */
  session: Record<string, unknown> | null;
}

/** Every gateway client secret starts with this: the auth tap looks no further at anything else. */
export const SECRET_PREFIX = 'ek_gw_';
/** The subprotocol a browser names its key with; never echoed back. */
export const KEY_PROTOCOL = 'openai-insecure-api-key.';
const AAD = 'realtime-client-secret';
/** Longer than any grant the gateway mints (a few routing headers): anything bigger is not one. */
const MAX_SECRET_CHARS = 16_384;

export function mintSecret(box: SecretBox, grant: SecretGrant): string {
  // base64url: a WebSocket subprotocol is a token (RFC 6455), and the sealed form's ':' is not a token character.
  return SECRET_PREFIX + Buffer.from(box.seal(JSON.stringify(grant), AAD)).toString('base64url');
}

/** The grant a secret carries, or null when it is not one this gateway sealed (wrong key, tampered, malformed). */
export function openSecret(box: SecretBox, secret: string): SecretGrant | null {
  if (!secret.startsWith(SECRET_PREFIX) || secret.length > MAX_SECRET_CHARS) return null;
  try {
    const grant = JSON.parse(box.open(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64url').toString('utf8'), AAD)) as SecretGrant;
    return typeof grant.model === 'string' && typeof grant.expiresAt === 'number' && typeof grant.auth?.keyId === 'string' ? grant : null;
  } catch {
    return null;
  }
}

/**
 * The secret a realtime handshake carries: a browser offers it as the subprotocol `openai-insecure-api-key.<secret>`
 * (what OpenAI's browser clients send), a server-side client as `Authorization: Bearer <secret>`.
 */
export function secretOf(protocols: string | undefined, authorization: string | undefined): string | null {
  if (protocols !== undefined) {
    for (const p of protocols.split(',')) {
      const value = p.trim();
      if (value.startsWith(KEY_PROTOCOL) && value.startsWith(SECRET_PREFIX, KEY_PROTOCOL.length)) return value.slice(KEY_PROTOCOL.length);
    }
  }
  if (authorization !== undefined && authorization.startsWith('Bearer ') && authorization.startsWith(SECRET_PREFIX, 7)) return authorization.slice(7).trim();
  return null;
}
