/**
 * Checks and clean-up for URLs the gateway calls on a caller's behalf
 * (custom hosts, webhooks). Shared by the `custom_host` field, the
 * `x-gateway-custom-host` header, the control plane and the guardrail checks,
 * so every entry point refuses the same URLs with the same words.
 */

/**
 * What is wrong with `raw` as the base of an upstream URL, or null when
 * nothing is: it must parse as an absolute `http` or `https` URL with a host,
 * and must not carry user info (a password in a URL ends up in messages and
 * logs; credentials belong in a key field or a header). The message never
 * repeats `raw`, which may hold that password.
 */
export function upstreamUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL with a host, e.g. https://llm.example.com/v1';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not contain user info (user:password@); send credentials in a key field or a header';
  return null;
}

/**
 * `scheme://user:password@` in any text becomes `scheme://`: the greedy
 * match runs to the last `@` before the host ends (`/`, `?`, `#`, white
 * space), as URL parsers read user info, so `a@b@host` loses both parts.
 */
const USER_INFO = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s?#]*@/gi;

/**
 * `text` with user info removed from every URL in it, for error messages and
 * log lines. A defence in depth: custom hosts with user info are refused on
 * arrival, but a URL can reach a message by other roads (a provider's base
 * URL option, a stored slug, text a check quotes).
 */
export function withoutUserInfo(text: string): string {
  // Cheap test first: most messages hold no URL with an `@` at all.
  if (!text.includes('@')) return text;
  return text.replace(USER_INFO, '$1');
}
