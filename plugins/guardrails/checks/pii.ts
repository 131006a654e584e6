import { isIPv4, isIPv6 } from 'node:net';
import * as v from 'valibot';
import { defineCheck } from '../../../sdk/index.js';
import { parameters } from './params.js';

export const PII_CATEGORIES = ['email', 'phone', 'credit_card', 'iban', 'ssn', 'ip'] as const;
export type PiiCategory = (typeof PII_CATEGORIES)[number];

/** One piece of PII: where it is and what it is. Never logged with its text. */
export interface PiiFinding {
  /** null: a look-alike (an IBAN with a bad checksum) that only keeps later detectors off its span. */
  category: PiiCategory | null;
  start: number;
  end: number;
}

const EMAIL = /(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}\b/g;
/** Country code, check digits, then 11–30 letters or digits, optionally in space-separated groups. */
const IBAN = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}/g;
/** A run of digit groups separated by single spaces or hyphens; a leading + marks a phone number, not a card. */
const DIGIT_RUN = /(?<![\w+.-])\+?\d+(?:[ -]\d+)*/g;
const SSN = /(?<![\w-])(\d{3})-(\d{2})-(\d{4})(?![\w-])/g;
const IPV4 = /(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?!\w|\.\d)/g;
const HEXISH = /[0-9A-Fa-f:.]+/g;
const PHONE = /(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,5}(?!\w|[.-]\d)|(?<![\w+])\+\d{7,15}\b/g;

/** IBAN length by country (ISO 13616 registry). Other country codes are accepted at 15–34 characters. */
const IBAN_LENGTH: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28,
  HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20,
  LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29,
  RO: 24, RS: 22, SA: 24, SC: 31, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22,
  VG: 24, XK: 20,
};

/** Luhn: double every second digit from the right; the sum is a multiple of 10. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** ISO 7064 mod 97-10: the first four characters moved to the end, letters as 10–35, the number mod 97 is 1. */
export function ibanValid(compact: string): boolean {
  const moved = compact.slice(4) + compact.slice(0, 4);
  let r = 0;
  for (let i = 0; i < moved.length; i++) {
    const c = moved.charCodeAt(i);
    if (c >= 48 && c <= 57) r = (r * 10 + (c - 48)) % 97;
    else if (c >= 65 && c <= 90) r = (r * 100 + (c - 55)) % 97;
    else return false;
  }
  return r === 1;
}

/** US SSN rules: area not 000, 666 or 900–999; group not 00; serial not 0000. */
export function ssnValid(area: string, group: string, serial: string): boolean {
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

/** A span found by a detector: [start, end], or [start, end, false] for a look-alike that is not PII but must not be reported by a later detector (an IBAN with a bad checksum is not a card number). */
type Span = [number, number] | [number, number, false];

const ALNUM = /[A-Za-z0-9]/;
const WORD_CHAR = /\w/;
const DIGIT = /\d/;
const DIGITS = /\d+/g;
const NON_DIGITS = /\D/g;

const isAlnum = (ch: string | undefined) => ch !== undefined && ALNUM.test(ch);

function* emails(text: string): Generator<Span> {
  for (const m of text.matchAll(EMAIL)) yield [m.index, m.index + m[0].length];
}

function* ibans(text: string): Generator<Span> {
  IBAN.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = IBAN.exec(text)) !== null) {
    const start = m.index;
    const raw = m[0];
    // Offsets (in the text) just after each compact character.
    const ends: number[] = [];
    let compact = '';
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] === ' ') continue;
      compact += raw[i];
      ends.push(start + i + 1);
    }
    const known = IBAN_LENGTH[compact.slice(0, 2)];
    const lengths = known !== undefined ? [known] : Array.from({ length: Math.min(34, compact.length) - 14 }, (_, k) => Math.min(34, compact.length) - k);
    let found = false;
    for (const length of lengths) {
      if (length > compact.length) continue;
      const end = ends[length - 1]!;
      if (isAlnum(text[end])) continue; // the cut would split a word
      const valid = ibanValid(compact.slice(0, length));
      // A registered country's IBAN-shaped text with a bad checksum is a look-alike: claimed, not reported.
      if (!valid && known === undefined) continue;
      found = true;
      yield valid ? [start, end] : [start, end, false];
      IBAN.lastIndex = end;
      break;
    }
    if (!found) IBAN.lastIndex = start + 1;
  }
}

function* cards(text: string): Generator<Span> {
  for (const m of text.matchAll(DIGIT_RUN)) {
    if (m[0].startsWith('+')) continue;
    const groups: Array<{ start: number; end: number; digits: string; sep: string }> = [];
    for (const g of m[0].matchAll(DIGITS)) {
      const start = m.index + g.index;
      groups.push({ start, end: start + g[0].length, digits: g[0], sep: text[start - 1] ?? '' });
    }
    let i = 0;
    while (i < groups.length) {
      // The longest run of whole groups from i with 13–19 digits that passes Luhn. Written in groups,
      // a card number uses one separator throughout and groups of 3 to 6 digits (4-4-4-4, 4-6-5, 4-4-4-4-3).
      let best = -1;
      let digits = '';
      for (let j = i; j < groups.length; j++) {
        const g = groups[j]!;
        if (j > i && (g.sep !== groups[i + 1]!.sep || g.digits.length < 3 || g.digits.length > 6 || groups[i]!.digits.length < 3 || groups[i]!.digits.length > 6)) break;
        digits += g.digits;
        if (digits.length > 19) break;
        if (digits.length >= 13 && luhnValid(digits)) best = j;
      }
      if (best === -1) {
        i++;
        continue;
      }
      yield [groups[i]!.start, groups[best]!.end];
      i = best + 1;
    }
  }
}

function* ssns(text: string): Generator<Span> {
  for (const m of text.matchAll(SSN)) if (ssnValid(m[1]!, m[2]!, m[3]!)) yield [m.index, m.index + m[0].length];
}

/** Two colons with at most four hex digits between them: text without this holds no IPv6 address. */
const IPV6_HINT = /:[0-9A-Fa-f]{0,4}:/;

function* ips(text: string): Generator<Span> {
  // Most text has no IPv6 address, and every English word with a letter from a to f is a hex-ish run: skip the scan.
  if (IPV6_HINT.test(text)) {
    for (const m of text.matchAll(HEXISH)) {
      let candidate = m[0];
      if (candidate.indexOf(':') === candidate.lastIndexOf(':')) continue; // IPv6 has at least two colons
      while (candidate.endsWith('.') || (candidate.endsWith(':') && !candidate.endsWith('::'))) candidate = candidate.slice(0, -1);
      const before = text[m.index - 1];
      const after = text[m.index + candidate.length];
      if ((before !== undefined && WORD_CHAR.test(before)) || (after !== undefined && WORD_CHAR.test(after))) continue;
      if (DIGIT.test(candidate) && isIPv6(candidate)) yield [m.index, m.index + candidate.length];
    }
  }
  for (const m of text.matchAll(IPV4)) if (isIPv4(m[0])) yield [m.index, m.index + m[0].length];
}

function* phones(text: string): Generator<Span> {
  for (const m of text.matchAll(PHONE)) {
    const digits = m[0].replace(NON_DIGITS, '').length;
    const international = m[0].startsWith('+');
    if (digits <= 15 && digits >= (international ? 7 : 10)) yield [m.index, m.index + m[0].length];
  }
}

/** Detectors in priority order: a span claimed by one (an IBAN) is not reported again by a later one (a phone number). */
const DETECTORS: ReadonlyArray<[PiiCategory, (text: string) => Iterable<Span>]> = [
  ['email', emails],
  ['iban', ibans],
  ['credit_card', cards],
  ['ssn', ssns],
  ['ip', ips],
  ['phone', phones],
];

/**
 * Every piece of PII in the text, in order, without overlaps. All categories
 * are always detected (so a card number is never mistaken for a phone number
 * when only phones are asked for); filter the result by category.
 */
export function findPii(text: string): PiiFinding[] {
  const found: PiiFinding[] = []; // kept sorted by start, never overlapping
  // Every category needs a digit (cards, IBANs, SSNs, phones, IPv4), an @ (emails) or two colons (IPv6): most
  // prose has none of them, and is answered without running a pattern (a stream's window is checked often).
  if (text.length === 0 || (!DIGIT.test(text) && text.indexOf('@') === -1 && !IPV6_HINT.test(text))) return found;
  for (const [category, detect] of DETECTORS) {
    for (const [start, end, report] of detect(text)) {
      // The first finding that ends after `start`: the only one that may overlap.
      let lo = 0;
      let hi = found.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (found[mid]!.end <= start) lo = mid + 1;
        else hi = mid;
      }
      if (lo < found.length && found[lo]!.start < end) continue;
      found.splice(lo, 0, { category: report === false ? null : category, start, end });
    }
  }
  return found;
}

/** The PII findings of the given categories (look-alikes excluded). */
export function piiOf(text: string, categories: ReadonlySet<PiiCategory>): Array<PiiFinding & { category: PiiCategory }> {
  return findPii(text).filter((f): f is PiiFinding & { category: PiiCategory } => f.category !== null && categories.has(f.category));
}

export type PiiCounts = Partial<Record<PiiCategory, number>>;

/** Replaces each finding of the given categories with `[REDACTED_<CATEGORY>]`, counting them in `counts`. */
export function redactPii(text: string, categories: ReadonlySet<PiiCategory>, counts: PiiCounts): string {
  const findings = piiOf(text, categories);
  if (findings.length === 0) return text;
  let out = '';
  let at = 0;
  for (const f of findings) {
    out += text.slice(at, f.start) + `[REDACTED_${f.category.toUpperCase()}]`;
    at = f.end;
    counts[f.category] = (counts[f.category] ?? 0) + 1;
  }
  return out + text.slice(at);
}

type Redact = (text: string) => string;

/** A message content (string or parts) with its text redacted; other parts untouched. */
function redactContent(content: unknown, redact: Redact): unknown {
  if (typeof content === 'string') return redact(content);
  if (!Array.isArray(content)) return content;
  return content.map((part) =>
    part && typeof part === 'object' && TEXT_PARTS.has((part as { type?: unknown }).type) && typeof (part as { text?: unknown }).text === 'string'
      ? { ...part, text: redact((part as { text: string }).text) }
      : part,
  );
}

/** Part types holding text: chat's, the Responses API's and the Messages API's. */
const TEXT_PARTS: ReadonlySet<unknown> = new Set(['text', 'input_text', 'output_text']);

/** Items or messages (anything with `content`, or a Responses function call's `output`) with their text redacted. */
const redactItems = (items: unknown[], redact: Redact): unknown[] =>
  items.map((m: unknown) => {
    if (typeof m === 'string') return redact(m);
    if (!m || typeof m !== 'object') return m;
    const item = { ...(m as Record<string, unknown>) };
    if ('content' in item) item.content = redactContent(item.content, redact);
    if (typeof item.output === 'string') item.output = redact(item.output);
    return item;
  });

const redactStrings = (value: unknown, redact: Redact): unknown =>
  typeof value === 'string' ? redact(value) : Array.isArray(value) ? value.map((x) => (typeof x === 'string' ? redact(x) : x)) : value;

/**
 * The request with every message's text (chat, Messages, its `system`), the
 * prompt (completions), the input (embeddings; Responses items and their
 * `instructions`) redacted.
 */
export function redactRequest(body: Record<string, unknown>, redact: Redact): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  if (Array.isArray(body.messages)) out.messages = redactItems(body.messages, redact);
  if ('prompt' in body) out.prompt = redactStrings(body.prompt, redact);
  if ('input' in body) out.input = Array.isArray(body.input) && body.input.some((x) => x !== null && typeof x === 'object') ? redactItems(body.input, redact) : redactStrings(body.input, redact);
  if (typeof body.instructions === 'string') out.instructions = redact(body.instructions);
  if ('system' in body) out.system = redactContent(body.system, redact);
  return out;
}

/** The answer with every choice's message content (chat) or text (completions), a response's output text or a message's text blocks redacted. */
export function redactAnswer(answer: Record<string, unknown>, redact: Redact): Record<string, unknown> {
  if (answer.object === 'response' && Array.isArray(answer.output)) return { ...answer, output: redactItems(answer.output, redact) };
  if (answer.type === 'message' && Array.isArray(answer.content)) return { ...answer, content: redactContent(answer.content, redact) };
  if (!Array.isArray(answer.choices)) return answer;
  return {
    ...answer,
    choices: answer.choices.map((c: unknown) => {
      if (!c || typeof c !== 'object') return c;
      const choice = { ...(c as Record<string, unknown>) };
      if (typeof choice.text === 'string') choice.text = redact(choice.text);
      const message = choice.message as Record<string, unknown> | undefined;
      if (message && typeof message === 'object' && 'content' in message) choice.message = { ...message, content: redactContent(message.content, redact) };
      return choice;
    }),
  };
}

const describe = (counts: PiiCounts) =>
  Object.entries(counts)
    .map(([c, n]) => `${n} ${c}`)
    .join(', ');

/**
 * `default.pii { categories?, redact? }`: detects emails, phone numbers,
 * credit card numbers (Luhn), IBANs (mod 97), US SSNs and IP addresses in the
 * checked text. Without `redact` it fails when any is found. With
 * `redact: true` it rewrites the request (input) or the answer (output) with
 * each finding replaced by `[REDACTED_<CATEGORY>]` and passes, since the data
 * was made safe. Results carry counts per category, never the values.
 */
export const pii = defineCheck({
  parameters: v.pipe(
    parameters({
      categories: v.optional(
        v.pipe(
          v.array(v.picklist(PII_CATEGORIES, `each category must be one of ${PII_CATEGORIES.join(', ')}`), 'categories must be an array'),
          v.minLength(1, 'categories must not be empty (leave it out for all)'),
        ),
      ),
      redact: v.optional(v.boolean('redact must be true or false'), false),
    }),
    v.transform((p) => ({ redact: p.redact, categories: new Set<PiiCategory>(p.categories ?? PII_CATEGORIES) })),
  ),
  // Each piece of PII is short: found in a window of the stream. With `redact`, a streamed answer's findings are
  // replaced as it goes out (the hook's stream_mode defaults to redact).
  stream: (p) => ({ scope: 'window', redacts: p.redact }),
  run({ categories, redact }, input) {
    const counts: PiiCounts = {};
    if (redact && input.phase === 'output' && input.response === null) {
      const redactions = piiOf(input.text, categories).map((f) => {
        counts[f.category] = (counts[f.category] ?? 0) + 1;
        return { start: f.start, end: f.end, replacement: `[REDACTED_${f.category.toUpperCase()}]` };
      });
      if (redactions.length === 0) return { verdict: true, explanation: 'No PII found.', data: { found: counts, redacted: false } };
      return { verdict: true, explanation: `Redacted PII in the streamed answer: ${describe(counts)}.`, data: { found: counts, redacted: true }, redactions };
    }
    if (redact && (input.phase === 'input' || input.response !== null)) {
      const rewrite: Redact = (t) => redactPii(t, categories, counts);
      const transformed = input.phase === 'input' ? redactRequest(input.request, rewrite) : redactAnswer(input.response!, rewrite);
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      if (total === 0) return { verdict: true, explanation: 'No PII found.', data: { found: counts, redacted: false } };
      return {
        verdict: true,
        explanation: `Redacted PII in the ${input.phase === 'input' ? 'request' : 'answer'}: ${describe(counts)}.`,
        data: { found: counts, redacted: true },
        transformed,
      };
    }
    for (const f of piiOf(input.text, categories)) counts[f.category] = (counts[f.category] ?? 0) + 1;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    if (total === 0) return { verdict: true, explanation: 'No PII found.', data: { found: counts, redacted: false } };
    return { verdict: false, explanation: `The text contains PII: ${describe(counts)}.`, data: { found: counts, redacted: false } };
  },
});
