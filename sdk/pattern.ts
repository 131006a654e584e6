import { RE2JS } from 're2js';

/*
 * Regular expressions that come from a client or a config (a conditional
 * route's `$regex`, the `default.regexMatch` check) run on RE2, through
 * re2js, a pure JavaScript port: matching takes time linear in the text, with
 * no backtracking, so no pattern can stall the event loop the way
 * `^(a+)+$` does on JavaScript's own engine. RE2 has no backreferences and no
 * lookaround; docs/guardrails.md lists the syntax.
 *
 * Linear is not free: compiling costs about the size of the program RE2
 * builds, and matching at worst the text's length times that size (when the
 * pattern defeats RE2's DFA, as `a[ab]{200}b$` does, and it falls back to
 * simulating the program: about 18 ns per character and instruction here, so
 * 4 s for 1 MB at 200 instructions). Counted repetitions are what make a
 * short pattern large (`(?:ab){1000}` is 2,000 instructions), so a pattern is
 * measured from its text before it is compiled, and refused when it would be
 * too large; and a text is matched only when its length times the pattern's
 * size is within a budget, which bounds the worst case of one match to about
 * a third of a second while a simple pattern still scans megabytes.
 */

/** Longest pattern accepted, in UTF-16 code units. */
export const MAX_PATTERN_LENGTH = 512;

/**
 * Largest program a pattern may compile to: one unit per literal character,
 * class, escape or operator, with counted repetitions multiplied out, as RE2
 * expands them.
 */
export const MAX_PATTERN_SIZE = 2_000;

/**
 * Most work one match may take: the text's length (UTF-16 code units) times
 * the pattern's compiled size. A 10-instruction pattern scans up to 2 M
 * characters, a 2,000-instruction one 10,000.
 */
export const MAX_MATCH_COST = 20_000_000;

/** A compiled pattern. */
export interface Pattern {
  /** The pattern as given. */
  readonly source: string;
  /** The size of the compiled program, in RE2 instructions. */
  readonly size: number;
  /** The longest text this pattern may be matched against ({@link MAX_MATCH_COST} over its size). */
  readonly maxTextLength: number;
  /**
   * True when the pattern matches anywhere in `text`.
   * @throws PatternError when `text` is longer than `maxTextLength`.
   */
  test(text: string): boolean;
  /**
   * The first match's text, or null.
   * @throws PatternError when `text` is longer than `maxTextLength`.
   */
  match(text: string): string | null;
}

/**
 * Compiles a client- or config-supplied pattern on RE2. Call it when the
 * config is parsed, never per request.
 *
 * @throws PatternError with a message that completes "`<field>` …" (e.g.
 *   `is not a valid RE2 pattern: missing closing ]`), for the caller to turn
 *   into its 400.
 */
export function compilePattern(source: string): Pattern {
  if (source.length > MAX_PATTERN_LENGTH) throw new PatternError(`is longer than ${MAX_PATTERN_LENGTH} characters`);
  // The estimate keeps the compiler from building a huge program only to refuse it; the compiled size decides.
  if (patternSize(source) > 4 * MAX_PATTERN_SIZE) throw tooLarge();
  let re: RE2JS;
  try {
    re = RE2JS.compile(source);
  } catch (err) {
    // RE2's own message names the construct it refused and quotes only the pattern.
    throw new PatternError(`is not a valid RE2 pattern: ${String((err as Error).message).replace(/^error parsing regexp: /, '').slice(0, 200)}`);
  }
  const size = re.programSize();
  if (size > MAX_PATTERN_SIZE) throw tooLarge();
  const maxTextLength = Math.floor(MAX_MATCH_COST / Math.max(size, 1));
  const within = (text: string) => {
    if (text.length > maxTextLength) {
      throw new PatternError(`cannot be matched against a text of ${text.length} characters: a pattern of ${size} instructions scans at most ${maxTextLength}`);
    }
  };
  return {
    source,
    size,
    maxTextLength,
    test: (text) => {
      within(text);
      return re.test(text);
    },
    // test() runs RE2's DFA; exec() the slower capturing engines, so it runs only on a text already known to match.
    match: (text) => {
      within(text);
      return re.test(text) ? ((re.exec(text)?.[0] as string | undefined) ?? null) : null;
    },
  };
}

function tooLarge(): PatternError {
  return new PatternError(`compiles to more than ${MAX_PATTERN_SIZE} instructions (counted repetitions such as {1000} multiply what they repeat)`);
}

/** A pattern refused by {@link compilePattern}; its message says why, without the field name. */
export class PatternError extends Error {
  /** Always `PatternError`, to tell it apart in logs. */
  override readonly name = 'PatternError';
}

const COUNTED = /\{(\d{1,7})(?:(,)(\d{0,7}))?\}/y;

/**
 * About the size of the program RE2 would build, read from the text without
 * compiling: each atom counts one, a group the sum of its parts, and a counted
 * repetition multiplies the item before it by its largest count. Escapes and
 * character classes are skipped whole so their brackets and braces are not
 * taken for groups or counts. Only an estimate (within a small factor of
 * RE2's count): it stops a pattern that would expand far past the limit before
 * the compiler spends time on it.
 */
export function patternSize(source: string): number {
  const outer: Array<{ total: number; last: number }> = [];
  let total = 0;
  let last = 0;
  const atom = (weight: number) => {
    total += weight;
    last = weight;
  };
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const end = escapeEnd(source, i);
      // `\Q…\E` quotes a literal: one unit per character, and a repetition after it repeats its last character only.
      if (source[i + 1] === 'Q') {
        total += Math.max(1, end - i - 3);
        last = 1;
      } else {
        atom(1);
      }
      i = end;
    } else if (c === '[') {
      i = classEnd(source, i);
      atom(1);
    } else if (c === '(') {
      if (source[i + 1] === '?') {
        // `(?i)` sets flags and is no group; `(?:`, `(?P<name>`, `(?<name>` open one.
        const close = source.indexOf(')', i);
        const colon = source.indexOf(':', i);
        const named = source[i + 2] === 'P' || source[i + 2] === '<' ? source.indexOf('>', i) : -1;
        const open = named !== -1 ? named : colon !== -1 && (close === -1 || colon < close) ? colon : -1;
        if (open === -1) {
          i = close === -1 ? source.length - 1 : close;
          continue;
        }
        i = open;
      }
      outer.push({ total, last });
      total = 0;
      last = 0;
    } else if (c === ')') {
      const group = total + 1;
      const parent = outer.pop() ?? { total: 0, last: 0 };
      total = parent.total + group;
      last = group;
    } else if (c === '{') {
      COUNTED.lastIndex = i;
      const m = COUNTED.exec(source);
      if (m === null) {
        atom(1);
        continue;
      }
      // As RE2 sizes it: {n} is n copies, {n,} n copies and a loop, {n,m} m copies of which m - n optional.
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
      const repeated = max === -1 ? (min === 0 ? 2 + last : 1 + min * last) : max * last + Math.max(0, max - min);
      total += repeated - last;
      last = repeated;
      i += m[0].length - 1;
    } else if (c === '|') {
      total += 1;
      last = 0;
    } else {
      atom(1);
    }
    // Stop counting once over any cap: the caller refuses it either way.
    if (total > MAX_PATTERN_SIZE * 1000) return total;
  }
  while (outer.length > 0) total += outer.pop()!.total;
  return total;
}

/** Index of the last character of the escape starting at `i` (`\d`, `\x{263a}`, `\p{Greek}`, `\Q…\E`). */
function escapeEnd(source: string, i: number): number {
  const next = source[i + 1];
  if (next === 'Q') {
    const end = source.indexOf('\\E', i + 2);
    return end === -1 ? source.length - 1 : end + 1;
  }
  if ((next === 'x' || next === 'p' || next === 'P') && source[i + 2] === '{') {
    const end = source.indexOf('}', i + 3);
    return end === -1 ? source.length - 1 : end;
  }
  return i + 1;
}

/** Index of the `]` closing the class that opens at `i` (a `]` right after `[` or `[^` is a member). */
function classEnd(source: string, i: number): number {
  let j = i + 1;
  if (source[j] === '^') j++;
  if (source[j] === ']') j++;
  for (; j < source.length; j++) {
    const c = source[j];
    if (c === '\\') j = escapeEnd(source, j);
    else if (c === '[' && source[j + 1] === ':') {
      // A POSIX class inside a class: `[[:alpha:]]`.
      const end = source.indexOf(':]', j + 2);
      if (end !== -1) j = end + 1;
    } else if (c === ']') return j;
  }
  return source.length - 1;
}
