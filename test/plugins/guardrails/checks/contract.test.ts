import { guardrailChecks } from '../../../../plugins/guardrails/checks/index.js';
import { checkContract } from '../../../../server/testing/index.js';

// The check contract of the plugin test kit (server/testing), run on bundled checks: a plugin author's
// check passes the same suite (examples/acme-plugin does), so the kit cannot drift from what the bundled checks do.

checkContract({
  check: 'default.contains',
  plugins: () => [guardrailChecks()],
  cases: [
    { parameters: { words: ['forbidden', 'banned'], operator: 'none' }, pass: ['A fine text.', ''], fail: ['This is FORBIDDEN here.', 'split: ban ned is not, banned is'] },
    { parameters: { words: ['alpha', 'beta'], operator: 'all' }, pass: ['alpha then beta'], fail: ['only alpha'] },
  ],
  refused: [{ words: [] }, { words: ['x'], operator: 'some' }, { words: 'x' }],
});

checkContract({
  check: 'default.regexMatch',
  plugins: () => [guardrailChecks()],
  cases: [{ parameters: { rule: '\\bsecret\\b', not: true }, pass: ['nothing to see', 'secretive'], fail: ['the secret is out'] }],
  refused: [{ rule: '' }, { rule: '(' }],
});

checkContract({
  check: 'default.wordCount',
  plugins: () => [guardrailChecks()],
  cases: [{ parameters: { max: 3 }, pass: ['one two three'], fail: ['one two three four'] }],
  refused: [{ max: -1 }, { max: 'ten' }],
});

checkContract({
  check: 'default.pii',
  plugins: () => [guardrailChecks()],
  cases: [{ parameters: {}, pass: ['The weather is mild today.'], fail: ['Write to jane.doe@example.com please.'] }],
  refused: [{ categories: [] }],
});
