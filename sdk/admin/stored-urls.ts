import type { UpstreamClient } from '../../core/index.js';

/** Where a saved config holds guardrail entries, whose checks may call out (`default.webhook`'s `url`). */
const GUARDRAIL_KEYS: ReadonlySet<string> = new Set(['input_guardrails', 'output_guardrails', 'before_request_hooks', 'after_request_hooks']);

/**
 * Refuses a stored document whose upstream URLs the outbound host policy refuses: every
 * `custom_host`, and every `url` inside guardrail entries (all of `entry` when `inGuardrail`).
 * An address (and `localhost`) is judged now, when it is written, with the 400
 * `host_not_allowed` naming the field; a host name is judged again by what it resolves to
 * when it is called, as every upstream URL is.
 */
export function checkStoredUrls(upstream: Pick<UpstreamClient, 'checkUrl'>, value: unknown, param: string, inGuardrail = false): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkStoredUrls(upstream, item, `${param}[${i}]`, inGuardrail));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value)) {
    const at = param === '' ? key : `${param}.${key}`;
    if (typeof child === 'string' && (key === 'custom_host' || (inGuardrail && key === 'url'))) upstream.checkUrl(child, at);
    else checkStoredUrls(upstream, child, at, inGuardrail || GUARDRAIL_KEYS.has(key));
  }
}
