import { expect, test } from 'vitest';
import { mightHoldSecret } from '../../../plugins/logs/redact.js';

/** The trigger words as a plain list: the grouped pattern in redact.ts must match exactly what this matches. */
const WORDS = /api[_-]?key|apikey|secret|passw|passphrase|authori[sz]ation|auth["=]|token["=]|bearer|private[_-]?key|access[_-]?key|credential|cookie|service[_-]?account|sk-|gwk-|aiza|akia|asia|gsk|xai|pplx|fw|csk|-----begin/i;

const PIECES = [
  'api', 'key', '_', '-', 'Key', 'API', 'secret', 'pass', 'w', 'phrase', 'auth', 'ori', 'z', 's', 'ation', '"', '=', 'token', 'tokens',
  'bearer', 'private', 'access', 'credential', 'cookie', 'service', 'account', 'sk', 'gwk', 'aiza', 'AKIA', 'asia', 'gsk', 'xai', 'pplx',
  'fw', 'csk', '-----', 'begin', 'BEGIN', 'a', 'c', 'p', 'x', ' ', 'hello', '{', '}', ':', 'é', '🎉',
];

test('the quick secret check matches what the plain word list matches, on every trigger and on random text', () => {
  for (const word of ['apikey', 'api_key', 'api-key', 'APIKEY', 'secret', 'passw', 'passphrase', 'authorization', 'authorisation', 'auth"', 'auth=', 'token"', 'token=', 'bearer', 'private_key', 'privatekey', 'access-key', 'credential', 'cookie', 'service_account', 'serviceaccount', 'sk-', 'gwk-', 'aiza', 'akia', 'asia', 'gsk', 'xai', 'pplx', 'fw', 'csk', '-----begin']) {
    expect(mightHoldSecret(`x ${word} y`), word).toBe(true);
    expect(mightHoldSecret(word.toUpperCase()), word).toBe(true);
  }
  for (const clean of ['', 'hello world', '{"prompt_tokens":9,"total_tokens":11}', 'tokens', 'auth', 'passes', 'service', 'access', 'private']) {
    expect(mightHoldSecret(clean), clean).toBe(false);
  }
  // A fixed-seed generator: the same strings every run.
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  let positives = 0;
  for (let i = 0; i < 20_000; i++) {
    let s = '';
    for (let j = next() % 8; j >= 0; j--) s += PIECES[next() % PIECES.length];
    const expected = WORDS.test(s);
    if (expected) positives++;
    expect(mightHoldSecret(s), s).toBe(expected);
  }
  // Both outcomes were exercised, many times.
  expect(positives).toBeGreaterThan(1000);
  expect(positives).toBeLessThan(19_000);
});
