import { describe, expect, test } from 'vitest';
import { characterCount, countCharacters } from '../../../../plugins/guardrails/checks/character-count.js';
import { containsCode, findCode } from '../../../../plugins/guardrails/checks/contains-code.js';
import { endsWith } from '../../../../plugins/guardrails/checks/ends-with.js';
import { countSentences, sentenceCount } from '../../../../plugins/guardrails/checks/sentence-count.js';
import { findUrls, plausibleHostname, validUrls } from '../../../../plugins/guardrails/checks/valid-urls.js';
import { countWords, wordCount } from '../../../../plugins/guardrails/checks/word-count.js';
import { refused, runCheck, verdictOf } from './helpers.js';

describe.each([
  ['wordCount', wordCount, 'one two three four', 4],
  ['sentenceCount', sentenceCount, 'One. Two! Three? Four', 4],
  ['characterCount', characterCount, 'abcd', 4],
] as const)('default.%s', (_name, check, fourText, four) => {
  test('true when the count is within [min, max]', async () => {
    expect(await verdictOf(check, { min: four, max: four }, fourText)).toBe(true);
    expect(await verdictOf(check, { min: 1 }, fourText)).toBe(true);
    expect(await verdictOf(check, { max: 10 }, fourText)).toBe(true);
  });

  test('false outside it, with the count in data and an explanation', async () => {
    const r = await runCheck(check, { min: 5, max: 10 }, fourText);
    expect(r.verdict).toBe(false);
    expect(r.data).toMatchObject({ count: four, min: 5, max: 10 });
    expect(r.explanation).toContain('between 5 and 10');
    expect(await verdictOf(check, { max: 3 }, fourText)).toBe(false);
  });

  test('not inverts', async () => {
    expect(await verdictOf(check, { min: 5, not: true }, fourText)).toBe(true);
    expect(await verdictOf(check, { max: 10, not: true }, fourText)).toBe(false);
  });

  test('bad parameters are refused with a readable message', () => {
    expect(refused(check, {})).toContain('at least one of min and max');
    expect(refused(check, { min: 5, max: 2 })).toContain('min must not be greater than max');
    expect(refused(check, { min: -1 })).toContain('min must be 0 or more');
    expect(refused(check, { max: 1.5 })).toContain('max must be a whole number');
    expect(refused(check, { min: '3' })).toContain('min must be a number');
    expect(refused(check, { min: 1, not: 'yes' })).toContain('not must be true or false');
    expect(refused(check, { min: 1, maximum: 3 })).toMatch(/unknown parameter "maximum" \(known: min, max, not\)/);
    expect(refused(check, 'min=1')).toContain('parameters must be an object with: min, max, not');
  });
});

describe('counting rules', () => {
  test('words: whitespace-separated tokens with a letter or digit', () => {
    expect(countWords('')).toBe(0);
    expect(countWords('Hello — world, it is 2024.')).toBe(5);
    expect(countWords("  don't   stop\nbelieving  ")).toBe(3);
  });

  test('sentences: terminators followed by space or the end; decimals do not split; a trailing fragment counts', () => {
    expect(countSentences('')).toBe(0);
    expect(countSentences('Pi is 3.14 roughly. Yes!')).toBe(2);
    expect(countSentences('Wait... what?! Really')).toBe(3);
    expect(countSentences('First paragraph\n\nSecond paragraph')).toBe(2);
    expect(countSentences('"Quoted." Then more.')).toBe(2);
  });

  test('characters: code points, whitespace included', () => {
    expect(countCharacters('a b')).toBe(3);
    expect(countCharacters('😀')).toBe(1);
    expect(countCharacters('')).toBe(0);
  });
});

describe('default.endsWith', () => {
  test('true when the trimmed text ends with the suffix', async () => {
    expect(await verdictOf(endsWith, { suffix: 'Thanks!' }, 'Done. Thanks!  \n')).toBe(true);
  });
  test('false otherwise; not inverts', async () => {
    const r = await runCheck(endsWith, { suffix: 'Thanks!' }, 'Done.');
    expect(r.verdict).toBe(false);
    expect(r.explanation).toContain('does not end with "Thanks!"');
    expect(await verdictOf(endsWith, { suffix: 'thanks!' }, 'Thanks!')).toBe(false);
    expect(await verdictOf(endsWith, { suffix: 'Thanks!', not: true }, 'Done.')).toBe(true);
    expect(await verdictOf(endsWith, { suffix: 'Thanks!', not: true }, 'Thanks!')).toBe(false);
  });
  test('bad parameters', () => {
    expect(refused(endsWith, {})).toContain('suffix is required');
    expect(refused(endsWith, { suffix: '' })).toContain('suffix must not be empty');
    expect(refused(endsWith, { suffix: 1 })).toContain('suffix must be a string');
    expect(refused(endsWith, { suffix: 'x', not: 1 })).toContain('not must be true or false');
  });
});

describe('default.validUrls', () => {
  test('true when every URL is well-formed http(s) with a plausible host; a text with no URL passes', async () => {
    expect(await verdictOf(validUrls, {}, 'See https://example.com/docs?a=1. Or (http://sub.example.org/x), or http://localhost:8080/ and http://10.0.0.1/a.')).toBe(true);
    expect(await verdictOf(validUrls, {}, 'No links here.')).toBe(true);
    expect(await verdictOf(validUrls, {}, 'IDN: https://bücher.example/ and https://[::1]:8080/')).toBe(true);
  });
  test('false when one is not http(s), malformed or has an implausible host', async () => {
    for (const text of ['ftp://files.example.com/a', 'https://example.com and http://exa_mple.com', 'http://intranet/page', 'http://example.c0m/', 'http://-bad.example.com/', 'http://256.1.1.1/']) {
      const r = await runCheck(validUrls, {}, text);
      expect(r.verdict, text).toBe(false);
      expect(r.explanation).toMatch(/invalid/);
    }
  });
  test('not inverts; onlyDNS changes nothing (no lookups are made)', async () => {
    expect(await verdictOf(validUrls, { not: true }, 'http://intranet/page')).toBe(true);
    expect(await verdictOf(validUrls, { not: true }, 'https://example.com')).toBe(false);
    expect(await verdictOf(validUrls, { onlyDNS: true }, 'https://example.com')).toBe(true);
    expect(await verdictOf(validUrls, { onlyDNS: true }, 'https://no-such-host-xyz.example/')).toBe(true);
  });
  test('an invalid URL is reported without its user info', async () => {
    const r = await runCheck(validUrls, {}, 'log in at http://admin:SECRET-pw@intranet/page');
    expect(r.verdict).toBe(false);
    expect(r.explanation).toContain('http://intranet/page');
    expect(JSON.stringify(r)).not.toContain('SECRET');
  });
  test('URL finding and host names', () => {
    expect(findUrls('a https://x.example/(y) b, [http://y.example/z].')).toEqual(['https://x.example/(y)', 'http://y.example/z']);
    expect(plausibleHostname('a.b.example.com')).toBe(true);
    expect(plausibleHostname('xn--bcher-kva.example')).toBe(true);
    expect(plausibleHostname('example')).toBe(false);
    expect(plausibleHostname(`${'a'.repeat(64)}.com`)).toBe(false);
  });
  test('bad parameters', () => {
    expect(refused(validUrls, { onlyDNS: 'yes' })).toContain('onlyDNS must be true or false');
    expect(refused(validUrls, { not: 0 })).toContain('not must be true or false');
    expect(refused(validUrls, { dns: true })).toContain('unknown parameter "dns" (known: onlyDNS, not)');
  });
});

describe('default.containsCode', () => {
  test('true on a fenced block with the language tag (any alias)', async () => {
    expect(await verdictOf(containsCode, { format: 'py' }, 'Here:\n```python\nprint(1)\n```\n')).toBe(true);
    expect(await verdictOf(containsCode, { format: 'python' }, '```py\nx = 1\n```')).toBe(true);
    expect(await verdictOf(containsCode, { format: 'sh' }, '~~~bash\nls\n~~~')).toBe(true);
    expect(await verdictOf(containsCode, { format: 'rust' }, '```rs\nfn main() {}\n```')).toBe(true);
  });
  test('false on prose, on another language, and on a block tagged otherwise', async () => {
    const r = await runCheck(containsCode, { format: 'py' }, 'None of this is True. For example: nothing.');
    expect(r.verdict).toBe(false);
    expect(r.explanation).toContain('no py code');
    expect(await verdictOf(containsCode, { format: 'js' }, '```ts\nconst a = 1;\nconsole.log(a)\n```')).toBe(false);
    expect(await verdictOf(containsCode, { format: 'rust' }, 'fn main() {}')).toBe(false); // no heuristics for rust: fences only
  });
  test('not inverts', async () => {
    expect(await verdictOf(containsCode, { format: 'sql', not: true }, 'Just prose.')).toBe(true);
    expect(await verdictOf(containsCode, { format: 'sql', not: true }, 'SELECT * FROM users;')).toBe(false);
  });
  test.each([
    ['py', 'def add(a, b):\n    return a + b', 'Python is a language. I will import ideas.'],
    ['py', 'import os\nprint(os.getcwd())', 'Please print the report.'],
    ['js', 'const x = require("fs");', 'Require a formal request.'],
    ['js', 'const f = (a) => a + 1;\nif (a === b) {}', 'An arrow => points right.'],
    ['ts', 'interface User {\n  name: string;\n}', 'The user interface is nice.'],
    ['ts', 'function f(a: string): number {\n  return 1;\n}', 'function f(a) {\n  return 1;\n}'],
    ['sql', 'SELECT id, name FROM users WHERE id = 1;', 'Select a photo from your gallery.'],
    ['sql', 'CREATE TABLE t (id int);', 'We will create a table for the party.'],
    ['json', 'The result: {"a": 1, "b": [1, 2]}', 'Use {curly braces} for sets.'],
    ['bash', '$ npm install vitest', 'It costs $5 and $10.'],
    ['bash', '#!/bin/bash\necho hi', 'Echo is a nymph.'],
    ['bash', 'cat file.txt | grep error && echo found', 'The cat sat on the mat.'],
    ['html', '<div class="a"><p>Hi</p></div>', 'Use a div for layout.'],
    ['css', '.btn { color: red; }', 'Colour: red.'],
  ])('heuristic %s: %j is code, %j is not', (lang, code, prose) => {
    expect(findCode(lang, code)).toBe('heuristic');
    expect(findCode(lang, prose)).toBe(null);
  });
  test('bad parameters', () => {
    expect(refused(containsCode, {})).toContain('format is required');
    expect(refused(containsCode, { format: 'klingon' })).toContain('format "klingon" is not a known language');
    expect(refused(containsCode, { format: 3 })).toContain('format must be a string');
    expect(refused(containsCode, { format: 'py', not: 'no' })).toContain('not must be true or false');
  });
});
