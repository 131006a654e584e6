import { randomBytes } from 'node:crypto';

/**
 * What every response id the gateway makes starts with. OpenAI's and Azure
 * OpenAI's ids are `resp_` and hex digits, so `g` and `w` never follow their
 * `resp_`: an id with this start was made by the gateway (a translated
 * answer), and no provider holds it.
 */
export const GATEWAY_RESPONSE_ID_PREFIX = 'resp_gw_';

/** A response id for responses the gateway makes: {@link GATEWAY_RESPONSE_ID_PREFIX} and 48 hex digits. */
export function responseId(): string {
  return `${GATEWAY_RESPONSE_ID_PREFIX}${randomBytes(24).toString('hex')}`;
}

/**
 * Whether the gateway made this response id (then only the gateway's store can
 * hold it: a provider asked for it could only answer its own 404). Ids made
 * before the prefix existed (`resp_` and 48 hex digits) are not recognised.
 */
export function isGatewayResponseId(id: string): boolean {
  return id.startsWith(GATEWAY_RESPONSE_ID_PREFIX);
}

/** An output or input item id: `msg_…` (messages), `fc_…` (function calls), `rs_…` (reasoning), … */
export function responseItemId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
