import { expect, test } from 'vitest';
import { NDJSONParser, type NDJSONLine } from '../../sdk/index.js';

const VALUES = [{ delta: 'Hel' }, { delta: 'lo, wörld 👋🏽' }, [1, 2], 'text', 42, null, { done: { finish: 'done', tokens: { in: 9, out: 2 } } }];

function readInPieces(bytes: Buffer, cuts: number[], parser = new NDJSONParser()): NDJSONLine[] {
  const out: NDJSONLine[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...parser.push(bytes.subarray(at, cut)));
    at = cut;
  }
  out.push(...parser.end());
  return out;
}

test('every value comes back once, whatever the line ends and however the bytes are cut (multi-byte characters too)', () => {
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const expected = VALUES.map((value) => ({ value }));
  for (const eol of ['\n', '\r\n']) {
    // Blank lines between values are skipped; the last value has no newline after it.
    const bytes = Buffer.from(VALUES.map((v) => JSON.stringify(v)).join(`${eol}${eol}`), 'utf8');
    expect(readInPieces(bytes, []), JSON.stringify(eol)).toEqual(expected);
    for (let round = 0; round < 300; round++) {
      const cuts = Array.from({ length: next() % 8 }, () => next() % bytes.length).sort((a, b) => a - b);
      expect(readInPieces(bytes, cuts), `${JSON.stringify(eol)} cut at ${cuts.join(',')}`).toEqual(expected);
    }
  }
});

test('text chunks are accepted as well as bytes', () => {
  const parser = new NDJSONParser();
  expect(parser.push('{"a":')).toEqual([]);
  expect(parser.push('1}\n{"b"')).toEqual([{ value: { a: 1 } }]);
  expect(parser.push(':2}\n')).toEqual([{ value: { b: 2 } }]);
  expect(parser.end()).toEqual([]);
});

test('a line that is not JSON is an error line, and the lines after it still parse', () => {
  expect(readInPieces(Buffer.from('{"a":1}\nnot json\n{"b":2}\n{"cut":'), [3, 12])).toEqual([
    { value: { a: 1 } },
    { error: 'a line that is not JSON' },
    { value: { b: 2 } },
    { error: 'a line that is not JSON' },
  ]);
});

test('a line longer than the limit is reported once and skipped, without being held', () => {
  const parser = new NDJSONParser({ maxLineBytes: 16 });
  const long = JSON.stringify({ text: 'x'.repeat(40) });
  const lines = readInPieces(Buffer.from(`{"a":1}\n${long}\n{"b":2}\n${long}`), [10, 20, 30, 40], parser);
  expect(lines).toEqual([{ value: { a: 1 } }, { error: 'a line longer than 16 bytes' }, { value: { b: 2 } }, { error: 'a line longer than 16 bytes' }]);
  // A line of exactly the limit is kept.
  expect(new NDJSONParser({ maxLineBytes: 7 }).push('{"a":1}\n')).toEqual([{ value: { a: 1 } }]);
});

test('the parser keeps its own copy of a partial line: the caller may reuse its buffer', () => {
  const parser = new NDJSONParser();
  const buffer = Buffer.from('{"a":"xy');
  expect(parser.push(buffer)).toEqual([]);
  buffer.fill(0x20);
  expect(parser.push('z"}\n')).toEqual([{ value: { a: 'xyz' } }]);
});
