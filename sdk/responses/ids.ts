import { randomBytes } from 'node:crypto';

/** A response id in OpenAI's style (`resp_` and 48 hex digits), for responses the gateway makes. */
export function responseId(): string {
  return `resp_${randomBytes(24).toString('hex')}`;
}

/** An output or input item id: `msg_…` (messages), `fc_…` (function calls), `rs_…` (reasoning), … */
export function responseItemId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
