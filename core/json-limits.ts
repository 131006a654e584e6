/*
 * How deep a client's JSON may nest. Much of the gateway walks JSON
 * recursively (JSON.stringify when `override_params` rewrites a body, the
 * cache's canonical key, guardrail and provider walkers), and a body of
 * 10,000 nested arrays overflows the stack in any of them: a 500 for what is
 * bad input. So depth is checked once, where the JSON comes in, before
 * anything walks it, and refused as a 400 naming the limit.
 */

/** Default deepest nesting of a JSON request body or config: objects and arrays inside one another. */
export const DEFAULT_MAX_JSON_DEPTH = 100;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when JSON text nests objects and arrays deeper than `limit`. One pass
 * without recursion or allocation, counting brackets outside strings, and
 * jumping over each string to its closing quote with `indexOf` (string
 * contents are most of a body's bytes); measured at about a third of
 * JSON.parse's time on a 1 KB chat body and a twentieth on 200 KB. It does not
 * validate (JSON.parse does that next), so malformed text just gives some
 * count. UTF-8 bytes of non-ASCII characters are all 0x80 or above, so they
 * are never taken for a quote or a bracket.
 */
export function exceedsJsonDepth(text: Uint8Array | string, limit: number): boolean {
  const bytes = typeof text === 'string' ? null : Buffer.isBuffer(text) ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  const length = text.length;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const c = bytes === null ? (text as string).charCodeAt(i) : bytes[i]!;
    if (c === QUOTE) {
      i = bytes === null ? closingQuoteOfText(text as string, i) : closingQuote(bytes, i);
      if (i === -1) return false;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** Index of the quote closing the string that opens at `open`: the next one not escaped by an odd run of backslashes; -1 when none. */
function closingQuote(bytes: Buffer, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at === -1) return -1;
    let before = at - 1;
    while (bytes[before] === BACKSLASH) before--;
    if ((at - 1 - before) % 2 === 0) return at;
  }
}

function closingQuoteOfText(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return -1;
    let before = at - 1;
    while (text.charCodeAt(before) === BACKSLASH) before--;
    if ((at - 1 - before) % 2 === 0) return at;
  }
}

/**
 * True when a decoded JSON value (a config given as an object, not as text)
 * nests deeper than `limit`. Walks with an explicit stack, never recursion,
 * and stops at the first level over the limit.
 */
export function exceedsValueDepth(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > limit) return true;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
