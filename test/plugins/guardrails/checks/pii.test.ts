import { describe, expect, test } from 'vitest';
import { findPii, ibanValid, luhnValid, pii, PII_CATEGORIES, redactPii, ssnValid, type PiiCategory } from '../../../../plugins/guardrails/checks/pii.js';
import { inputOf, refused, runCheck } from './helpers.js';

const ALL = new Set(PII_CATEGORIES);
/** The categories found in a text, in order. */
const found = (text: string) => findPii(text).filter((f) => f.category !== null).map((f) => f.category);
const redacted = (text: string, categories: Iterable<PiiCategory> = ALL) => redactPii(text, new Set(categories), {});

describe('detection by category', () => {
  test.each<[PiiCategory, string[], string[]]>([
    ['email', ['jane.doe@example.com', 'a.b+tag@mail.example.co.uk', 'X_Y-1@sub.example.org'], ['jane.doe@', '@example.com', 'jane@localhost', 'user at example dot com', 'a@b.c']],
    [
      'phone',
      ['+1 (555) 123-4567', '555-123-4567', '(555) 123-4567', '+44 20 7946 0958', '+14155552671', '555.123.4567', '+33 1 23 45 67 89'],
      ['123-4567', '2024-01-15', '12:30:45', 'version 1.2.3', 'order 12345', '+123', '1234567'],
    ],
    [
      'credit_card',
      ['4111 1111 1111 1111', '4111-1111-1111-1111', '4111111111111111', '378282246310005', '3782 822463 10005', '5555 5555 5555 4444', '6011111111111117'],
      ['4111 1111 1111 1112', '4111111111111112', '1234 5678 9012 3456', '4111 1111-1111 1111', '411 11 1111 1111 111', '37828224631000'],
    ],
    ['iban', ['DE89 3704 0044 0532 0130 00', 'DE89370400440532013000', 'GB82 WEST 1234 5698 7654 32', 'FR14 2004 1010 0505 0001 3M02 606', 'NO9386011117947'], ['DE89 3704 0044 0532 0130 01', 'GB82 WEST 1234 5698 7654 33', 'DE00370400440532013000', 'DE8937040044053201300']],
    ['ssn', ['078-05-1120', '123-45-6789', '899-99-9999'], ['000-12-3456', '666-12-3456', '900-12-3456', '987-65-4321', '123-00-4567', '123-45-0000', '123-456-789', '1234-56-789']],
    ['ip', ['192.168.1.10', '8.8.8.8', '2001:db8::8a2e:370:7334', 'fe80::1', '::1', '::ffff:10.0.0.1', '2001:0db8:0000:0000:0000:ff00:0042:8329'], ['256.1.1.1', '1.2.3', '192.168.1', '00:1A:2B:3C:4D:5E', 'std::vector', '12:30:45', 'a::b']],
  ])('%s: positives and near misses', (category, positives, negatives) => {
    for (const p of positives) {
      expect(found(`before ${p} after`), p).toEqual([category]);
      expect(redacted(`before ${p} after`), p).toBe(`before [REDACTED_${category.toUpperCase()}] after`);
    }
    for (const n of negatives) expect(found(`before ${n} after`), n).toEqual([]);
  });

  test('the checksums', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(ibanValid('GB82WEST12345698765432')).toBe(true);
    expect(ibanValid('GB82WEST12345698765433')).toBe(false);
    expect(ssnValid('078', '05', '1120')).toBe(true);
    expect(ssnValid('666', '05', '1120')).toBe(false);
  });

  test('several kinds in one text, each once, without overlaps', () => {
    const text = 'Mail ada@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, SSN 078-05-1120, from 10.0.0.1.';
    expect(found(text)).toEqual(['email', 'phone', 'credit_card', 'iban', 'ssn', 'ip']);
    expect(redacted(text)).toBe(
      'Mail [REDACTED_EMAIL] or call [REDACTED_PHONE]; card [REDACTED_CREDIT_CARD], IBAN [REDACTED_IBAN], SSN [REDACTED_SSN], from [REDACTED_IP].',
    );
  });

  test('a card number is never reported as a phone number, even when only phones are asked for', () => {
    expect(redacted('card 4111 1111 1111 1111', ['phone'])).toBe('card 4111 1111 1111 1111');
    expect(redacted('an IBAN-looking DE89 3704 0044 0532 0130 01 with a bad checksum')).toBe('an IBAN-looking DE89 3704 0044 0532 0130 01 with a bad checksum');
  });

  test('a long text with many findings stays fast', () => {
    const text = 'ada@example.com 10.0.0.1 4111111111111111 '.repeat(5000);
    const t0 = performance.now();
    expect(findPii(text).length).toBe(15000);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('default.pii', () => {
  test('true on a text without PII', async () => {
    const r = await runCheck(pii, {}, 'The weather is fine, the meeting is at 10:30 on 2024-05-01.');
    expect(r).toMatchObject({ verdict: true, explanation: 'No PII found.', data: { found: {} } });
  });

  test('false when PII is found; data holds counts per category, never the values', async () => {
    const r = await runCheck(pii, {}, 'Reach me at ada@example.com or bob@example.org, card 4111 1111 1111 1111.');
    expect(r.verdict).toBe(false);
    expect(r.data).toEqual({ found: { email: 2, credit_card: 1 }, redacted: false });
    expect(r.explanation).toBe('The text contains PII: 2 email, 1 credit_card.');
    expect(JSON.stringify(r)).not.toContain('ada@example.com');
    expect(JSON.stringify(r)).not.toContain('4111');
    expect(r.transformed).toBeUndefined();
  });

  test('categories limit what is looked for', async () => {
    expect((await runCheck(pii, { categories: ['ssn'] }, 'mail ada@example.com')).verdict).toBe(true);
    expect((await runCheck(pii, { categories: ['email'] }, 'mail ada@example.com')).verdict).toBe(false);
  });

  test('redact on input: every message (string content and text parts), the verdict true, counts in data', async () => {
    const request = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Operator phone: +1 (555) 123-4567.' },
        { role: 'user', content: [{ type: 'text', text: 'My card is 4111 1111 1111 1111' }, { type: 'image_url', image_url: { url: 'https://img.example/a.png' } }] },
        { role: 'assistant', content: null, tool_calls: [] },
        { role: 'user', content: 'and my mail is ada@example.com' },
      ],
    };
    const r = await runCheck(pii, { redact: true }, inputOf('and my mail is ada@example.com', { request }));
    expect(r.verdict).toBe(true);
    expect(r.data).toEqual({ found: { phone: 1, credit_card: 1, email: 1 }, redacted: true });
    expect(r.explanation).toBe('Redacted PII in the request: 1 phone, 1 credit_card, 1 email.');
    expect(r.transformed).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Operator phone: [REDACTED_PHONE].' },
        { role: 'user', content: [{ type: 'text', text: 'My card is [REDACTED_CREDIT_CARD]' }, { type: 'image_url', image_url: { url: 'https://img.example/a.png' } }] },
        { role: 'assistant', content: null, tool_calls: [] },
        { role: 'user', content: 'and my mail is [REDACTED_EMAIL]' },
      ],
    });
    expect(request.messages[3]!.content).toBe('and my mail is ada@example.com'); // the original is not mutated
  });

  test('redact on input: completions prompts and embeddings inputs', async () => {
    const completions = await runCheck(pii, { redact: true }, inputOf('x', { route: 'completions', request: { model: 'm', prompt: ['ip 10.1.2.3', 'fine'] } }));
    expect(completions.transformed).toEqual({ model: 'm', prompt: ['ip [REDACTED_IP]', 'fine'] });
    const embeddings = await runCheck(pii, { redact: true }, inputOf('x', { route: 'embeddings', request: { model: 'm', input: 'ssn 078-05-1120' } }));
    expect(embeddings.transformed).toEqual({ model: 'm', input: 'ssn [REDACTED_SSN]' });
  });

  test('redact with nothing to redact: true, no transformation', async () => {
    const r = await runCheck(pii, { redact: true }, 'hello');
    expect(r).toMatchObject({ verdict: true, data: { redacted: false } });
    expect(r.transformed).toBeUndefined();
  });

  test('redact on output: every choice, chat and text completions', async () => {
    const answer = {
      id: 'x',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Write to ada@example.com' } },
        { index: 1, message: { role: 'assistant', content: 'Nothing here' } },
      ],
    };
    const r = await runCheck(pii, { redact: true }, inputOf('Write to ada@example.com\nNothing here', { phase: 'output', response: answer }));
    expect(r.verdict).toBe(true);
    expect(r.transformed).toEqual({
      id: 'x',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Write to [REDACTED_EMAIL]' } },
        { index: 1, message: { role: 'assistant', content: 'Nothing here' } },
      ],
    });
    const text = await runCheck(pii, { redact: true, categories: ['ip'] }, inputOf('x', { phase: 'output', response: { choices: [{ text: 'host 8.8.8.8', index: 0 }] } }));
    expect(text.transformed).toEqual({ choices: [{ text: 'host [REDACTED_IP]', index: 0 }] });
  });

  test('redact on a streamed answer (no response body to rewrite): passes with the spans to replace, never the values', async () => {
    const text = 'mail ada@example.com or call +1 415 555 2671';
    const r = await runCheck(pii, { redact: true }, inputOf(text, { phase: 'output', response: null }));
    expect(r.verdict).toBe(true);
    expect(r.transformed).toBeUndefined();
    expect(r.redactions!.map((x) => [text.slice(x.start, x.end), x.replacement])).toEqual([
      ['ada@example.com', '[REDACTED_EMAIL]'],
      ['+1 415 555 2671', '[REDACTED_PHONE]'],
    ]);
    expect(r.data).toEqual({ found: { email: 1, phone: 1 }, redacted: true });
    expect(pii.stream!({ redact: true, categories: new Set() })).toEqual({ scope: 'window', redacts: true });
  });

  test('bad parameters', () => {
    expect(refused(pii, { categories: [] })).toContain('categories must not be empty');
    expect(refused(pii, { categories: ['passport'] })).toContain('each category must be one of email, phone, credit_card, iban, ssn, ip');
    expect(refused(pii, { categories: 'email' })).toContain('categories must be an array');
    expect(refused(pii, { redact: 'yes' })).toContain('redact must be true or false');
    expect(refused(pii, { mask: true })).toContain('unknown parameter "mask"');
  });
});
