import { expect, test } from 'vitest';
import { SSEParser, type SSEEvent } from '../../sdk/sse.js';

/** A stream exercising the framing: comments, named events, multi-line data, a field without a value, a space-less colon. */
const LINES = [': keepalive', 'data: {"a":1}', '', 'event: ping', 'data:x', '', 'data: one', 'data: two', 'id: 7', '', 'data', '', 'event: end', 'data: [DONE]', ''];
const EXPECTED: SSEEvent[] = [
  { event: null, data: '{"a":1}' },
  { event: 'ping', data: 'x' },
  { event: null, data: 'one\ntwo' },
  { event: null, data: '' },
  { event: 'end', data: '[DONE]' },
];

function parseInPieces(text: string, cuts: number[]): SSEEvent[] {
  const parser = new SSEParser();
  const out: SSEEvent[] = [];
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    out.push(...parser.push(text.slice(at, cut)));
    at = cut;
  }
  out.push(...parser.end());
  return out;
}

test('every line ending gives the same events, however the text is cut', () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (const eol of ['\n', '\r\n', '\r']) {
    const text = LINES.map((l) => l + eol).join('');
    expect(parseInPieces(text, []), JSON.stringify(eol)).toEqual(EXPECTED);
    for (let round = 0; round < 300; round++) {
      const cuts = Array.from({ length: next() % 6 }, () => next() % text.length).sort((a, b) => a - b);
      expect(parseInPieces(text, cuts), `${JSON.stringify(eol)} cut at ${cuts.join(',')}`).toEqual(EXPECTED);
    }
  }
});

test('a text mixing line endings, and one cut between \\r and \\n, frames as the spec says', () => {
  expect(parseInPieces('data: a\r\n\ndata: b\r\rdata: c\n\r\n', [])).toEqual([
    { event: null, data: 'a' },
    { event: null, data: 'b' },
    { event: null, data: 'c' },
  ]);
  // \r at the end of one piece and \n at the start of the next are one line end, not two.
  expect(parseInPieces('data: a\r\ndata: b\r\n\r\n', [8, 17])).toEqual([{ event: null, data: 'a\nb' }]);
  // An event without its blank line is completed by end().
  expect(parseInPieces('data: tail', [])).toEqual([{ event: null, data: 'tail' }]);
});
