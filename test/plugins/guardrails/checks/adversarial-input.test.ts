import { expect, test } from 'vitest';
import { BUNDLED_CHECKS } from '../../../../plugins/guardrails/checks/index.js';
import { inputOf, runCheck } from './helpers.js';

/** Parameters for each text check; the network checks (webhook, log) are left out. */
const PARAMS: Array<[string, unknown]> = [
  ['default.regexMatch', { rule: 'x' }],
  ['default.contains', { words: ['x'] }],
  ['default.wordCount', { max: 1 }],
  ['default.sentenceCount', { max: 1 }],
  ['default.characterCount', { max: 1 }],
  ['default.jsonSchema', { schema: { type: 'object' } }],
  ['default.jsonKeys', { keys: ['a'] }],
  ['default.validUrls', {}],
  ['default.endsWith', { suffix: 'x' }],
  ['default.pii', { redact: true }],
  ['default.promptInjection', {}],
  ...['py', 'js', 'ts', 'sql', 'json', 'bash', 'html', 'css'].map((format): [string, unknown] => ['default.containsCode', { format }]),
];

/** Repeated units that made naive patterns quadratic (long runs without the character a pattern waits for). */
const UNITS = [':', '```', '```py\n', '```\n', '{', '-', 'a.b', '.a', '<div>', '<a ', 'ignore ', '1 ', '1-', 'a@a.', '::1 ', 'A1b2', '4111 1111 ', '+1 1 ', 'DE89 ', ' ', '~~~', '```py\nx\n```\n'];

test.each(UNITS)('every check stays fast on 100 kB of %j', async (unit) => {
  const text = unit.repeat(Math.ceil(100_000 / unit.length));
  for (const [id, parameters] of PARAMS) {
    const t0 = performance.now();
    await runCheck(BUNDLED_CHECKS[id]!, parameters, inputOf(text));
    expect(performance.now() - t0, `${id} ${JSON.stringify(parameters)}`).toBeLessThan(1500);
  }
});
