import { isIPv4 } from 'node:net';
import * as v from 'valibot';
import { defineCheck, withoutUserInfo } from '../../../sdk/index.js';
import { parameters } from './params.js';

/** Anything that looks like `scheme://…` up to whitespace or a quote/bracket that cannot be part of it. Schemes are short: bounding them keeps the scan linear. */
const CANDIDATE = /\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}:\/\/[^\s<>"'`]+/g;
/** Punctuation that ends a sentence rather than a URL. */
const TRAILING = /[.,;:!?]+$/;
const DIGITS_AND_DOTS = /^[\d.]+$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** Cuts sentence punctuation and unbalanced closing brackets off the end of a URL found in prose. */
function trimUrl(raw: string): string {
  let url = raw;
  for (;;) {
    const before = url;
    url = url.replace(TRAILING, '');
    for (const [open, close] of [['(', ')'], ['[', ']'], ['{', '}']] as const) {
      if (url.endsWith(close) && url.split(close).length > url.split(open).length) url = url.slice(0, -1);
    }
    if (url === before) return url;
  }
}

/** The URLs of a text, as written (sentence punctuation trimmed). */
export function findUrls(text: string): string[] {
  return Array.from(text.matchAll(CANDIDATE), (m) => trimUrl(m[0])).filter((u) => u !== '');
}

/**
 * Whether a hostname is plausible: `localhost`, an IPv4 or bracketed IPv6
 * address, or DNS labels (letters, digits, inner hyphens; 1–63 each, 253 in
 * all) ending in an alphabetic or punycode top-level domain. Syntax only:
 * nothing is resolved.
 */
export function plausibleHostname(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  if (hostname.startsWith('[') && hostname.endsWith(']')) return true; // URL() has already checked the IPv6 address
  if (DIGITS_AND_DOTS.test(hostname)) return isIPv4(hostname);
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && TLD.test(labels.at(-1)!);
}

/** Why a URL is not valid, or null when it is. */
export function urlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a well-formed URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `uses ${url.protocol.slice(0, -1)}, not http(s)`;
  if (!plausibleHostname(url.hostname)) return `has an implausible host name "${url.hostname}"`;
  return null;
}

/** A URL as the check reports it: without user info (a password typed in a prompt is not repeated into logs), at most 200 characters. */
function quoted(url: string): string {
  return withoutUserInfo(url).slice(0, 200);
}

/**
 * `default.validUrls { onlyDNS?, not? }`: passes when every URL in the text
 * (`scheme://…`) is a well-formed http or https URL with a plausible host
 * name; a text with no URL passes. `not` inverts: it passes when at least one
 * URL is invalid. No check ever makes a network lookup (the gateway may run
 * without outbound DNS, and a lookup per answer would add latency), so the host
 * name is validated syntactically; `onlyDNS` is accepted for configs written for
 * other gateways (where it skips an HTTP request and only resolves the name)
 * and changes nothing here.
 */
export const validUrls = defineCheck({
  parameters: parameters({
    onlyDNS: v.optional(v.boolean('onlyDNS must be true or false'), false),
    not: v.optional(v.boolean('not must be true or false'), false),
  }),
  run({ not }, { text }) {
    const urls = findUrls(text);
    const invalid: Array<{ url: string; problem: string }> = [];
    for (const url of urls) {
      const problem = urlProblem(url);
      if (problem !== null) invalid.push({ url, problem });
    }
    const allValid = invalid.length === 0;
    const verdict = not ? !allValid : allValid;
    const first = invalid[0];
    const explanation = urls.length === 0
      ? `The text has no URL${not ? ', so none is invalid' : ''}.`
      : allValid
        ? `All ${urls.length} URL(s) are valid${not ? ', but at least one must be invalid' : ''}.`
        : `${invalid.length} of ${urls.length} URL(s) are invalid: ${quoted(first!.url)} ${first!.problem}.`;
    return { verdict, explanation, data: { urls: urls.length, invalid: invalid.map((i) => quoted(i.url)) } };
  },
});
