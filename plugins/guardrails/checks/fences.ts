/** One fenced code block of a Markdown text. */
export interface Fence {
  /** The info string's first word, lower-cased (`json`, `py`…); '' when untagged. */
  lang: string;
  code: string;
  /** Offsets of the whole block (fences included) in the text. */
  start: number;
  end: number;
}

const OPENING = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)/;
const CLOSING = /^[ \t]{0,3}(`{3,}|~{3,})[ \t]*$/;

/**
 * The fenced code blocks of a Markdown text, in order: a line opening with
 * three or more backticks or tildes (and an optional language tag), closed by
 * a line of at least as many of the same character. An unclosed fence is not
 * a block. Line by line, so the cost stays linear whatever the text.
 */
export function fencedBlocks(text: string): Fence[] {
  if (!text.includes('```') && !text.includes('~~~')) return [];
  const out: Fence[] = [];
  let open: { fence: string; lang: string; start: number; codeStart: number } | null = null;
  let at = 0;
  while (at <= text.length) {
    const nl = text.indexOf('\n', at);
    const end = nl === -1 ? text.length : nl;
    const line = text.slice(at, end);
    if (open === null) {
      const m = OPENING.exec(line);
      if (m !== null) open = { fence: m[1]!, lang: m[2]!.toLowerCase(), start: at, codeStart: end + 1 };
    } else {
      const m = CLOSING.exec(line);
      if (m !== null && m[1]![0] === open.fence[0] && m[1]!.length >= open.fence.length) {
        const code = open.codeStart <= at ? text.slice(open.codeStart, Math.max(open.codeStart, at - 1)) : '';
        out.push({ lang: open.lang, code, start: open.start, end });
        open = null;
      }
    }
    if (nl === -1) break;
    at = nl + 1;
  }
  return out;
}

export type JsonInText = { found: true; value: unknown; source: 'text' | 'fence' } | { found: false };

/**
 * The JSON of a text: the whole (trimmed) text when it parses, else the first
 * ```json (or untagged) fenced block that parses.
 */
export function jsonInText(text: string): JsonInText {
  const trimmed = text.trim();
  if (trimmed !== '') {
    try {
      return { found: true, value: JSON.parse(trimmed), source: 'text' };
    } catch {
      /* not plain JSON: look for a fenced block */
    }
  }
  let tries = 0;
  for (const fence of fencedBlocks(text)) {
    if ((fence.lang !== 'json' && fence.lang !== '') || fence.code.trim() === '') continue;
    if (++tries > 20) break; // a text with thousands of blocks is not an answer to parse
    try {
      return { found: true, value: JSON.parse(fence.code), source: 'fence' };
    } catch {
      /* the next block may be the one */
    }
  }
  return { found: false };
}
