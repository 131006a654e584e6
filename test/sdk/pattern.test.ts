import { RE2JS } from 're2js';
import { describe, expect, test } from 'vitest';
import { compilePattern, MAX_MATCH_COST, MAX_PATTERN_LENGTH, MAX_PATTERN_SIZE, PatternError } from '../../sdk/index.js';
import { patternSize } from '../../sdk/pattern.js';

const refusal = (source: string): string => {
  try {
    compilePattern(source);
  } catch (err) {
    expect(err).toBeInstanceOf(PatternError);
    return (err as Error).message;
  }
  throw new Error(`"${source}" was accepted`);
};

describe('compilePattern', () => {
  test('matches as RE2 does: anywhere in the text, flags inline, the first match returned', () => {
    const p = compilePattern('(?i)wor(ld)');
    expect(p.test('Hello World')).toBe(true);
    expect(p.match('Hello World and world')).toBe('World');
    expect(p.match('nothing')).toBeNull();
    expect(compilePattern('^\\d{3}-\\d{4}$').test('555-1234')).toBe(true);
    expect(compilePattern('\\bsecret\\b').test('the secrets')).toBe(false);
    expect(compilePattern('é').test('café')).toBe(true);
  });

  // JavaScript's engine takes about a second for 27 a's here, doubling with each more; RE2 is linear.
  test('a catastrophic-backtracking pattern answers at once on a long input', () => {
    const p = compilePattern('^(a+)+$');
    expect(p.test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(p.match(`${'a'.repeat(40)}!`)).toBeNull();
    expect(p.test('a'.repeat(40))).toBe(true);
  });

  test.each([
    ['(a)\\1', 'invalid escape sequence'],
    ['(?=a)', 'unsupported Perl syntax'],
    ['(?!a)b', 'unsupported Perl syntax'],
    ['(?<=a)b', 'is not a valid RE2 pattern'],
    ['[', 'missing closing ]'],
    ['a{1001}', 'invalid repeat count'],
  ])('refuses what RE2 does not do: %s', (source, message) => {
    expect(refusal(source)).toContain(message);
  });

  test(`refuses a pattern longer than ${MAX_PATTERN_LENGTH} characters`, () => {
    expect(refusal('a'.repeat(MAX_PATTERN_LENGTH + 1))).toBe(`is longer than ${MAX_PATTERN_LENGTH} characters`);
    expect(() => compilePattern('a'.repeat(MAX_PATTERN_LENGTH))).not.toThrow();
  });

  test('refuses a short pattern that compiles to a large program, before compiling it', () => {
    expect(refusal('(?:abababababab){1000}')).toContain(`more than ${MAX_PATTERN_SIZE} instructions`);
    expect(refusal('(?:[a-z]{1,1000})(?:[a-z]{1,1000})')).toContain('instructions');
    expect(refusal(`(?:${'ab'.repeat(250)}){1000}`)).toContain('instructions');
    expect(() => compilePattern('a{1000}')).not.toThrow();
  });
});

describe('patternSize', () => {
  // The estimate gates the compiler; it must stay within a small factor of what RE2 builds.
  test.each([
    '^(a+)+$',
    'a{1000}',
    '(?:ab){100}',
    '(?P<n>ab){100}',
    '(?i:ab){100}',
    '(?i)abc{3}',
    '((a{10}){10}){10}',
    '[{1000}]',
    '\\{1000\\}',
    'x{2,}',
    'x{2,5}',
    '[]a]{5}',
    '[^]a]{5}',
    '[[:alpha:]]{10}',
    '\\p{Greek}{20}',
    `\\Q${'a'.repeat(50)}\\E{100}`,
    '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
    '(?:[a-z]{1,1000})(?:[a-z]{1,1000})',
  ])('%s', (source) => {
    const actual = RE2JS.compile(source).programSize();
    const estimate = patternSize(source);
    expect(estimate).toBeGreaterThan(actual / 2 - 2);
    expect(estimate).toBeLessThan(actual * 2 + 10);
  });
});

describe('the work budget of one match', () => {
  // `a[ab]{200}b$` defeats RE2's DFA: matching falls back to simulating the program, about 4 s for 1 MB in re2js.
  test('a text longer than the budget allows for the pattern is refused, not scanned', () => {
    const p = compilePattern('a[ab]{200}b$');
    expect(p.maxTextLength).toBe(Math.floor(MAX_MATCH_COST / p.size));
    expect(p.maxTextLength).toBeLessThan(200_000);
    const text = 'ab'.repeat(500_000);
    expect(() => p.test(text)).toThrow(PatternError);
    expect(() => p.match(text)).toThrow(/scans at most/);
    expect(p.test(`a${'b'.repeat(201)}`)).toBe(true);
  });

  test('a simple pattern still scans megabytes', () => {
    const p = compilePattern('\\bsecret\\b');
    expect(p.maxTextLength).toBeGreaterThan(1_000_000);
    expect(p.test(`${'lorem ipsum '.repeat(100_000)} secret`)).toBe(true);
  });
});
