import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as v from 'valibot';
import { startMockOpenAI, type MockUpstream } from '../mocks/openai-upstream.js';
import { acmeChecks, maxDigits } from './examples/acme-max-digits.js';
import { acmeProvider } from './examples/acme-provider.js';
import { startAcmeGateway } from './examples/acme-gateway.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(`${ROOT}docs/writing-a-guardrail.md`, 'utf8');

/** `<!-- include: path -->` followed by a fenced block: the block must be the file, byte for byte. */
function includes(doc: string): Array<{ path: string; code: string }> {
  const out: Array<{ path: string; code: string }> = [];
  for (const m of doc.matchAll(/<!-- include: (\S+) -->\n```\w*\n([\s\S]*?)^```$/gm)) out.push({ path: m[1]!, code: m[2]! });
  return out;
}

describe('the doc shows the example files verbatim', () => {
  const blocks = includes(DOC);

  test('every example file is included once', () => {
    const files = readdirSync(`${ROOT}test/docs/examples`).filter((f) => f.endsWith('.ts')).map((f) => `test/docs/examples/${f}`).sort();
    expect(blocks.map((b) => b.path).sort()).toEqual(files);
  });

  test.each(includes(DOC).map((b) => [b.path, b.code]))('%s matches the file', (path, code) => {
    expect(code).toBe(readFileSync(`${ROOT}${path}`, 'utf8'));
  });
});

describe('acme.maxDigits on its own', () => {
  test('parameters and verdicts', async () => {
    const ok = v.safeParse(maxDigits.parameters, { max: 3 });
    expect(ok.success).toBe(true);
    const params = v.parse(maxDigits.parameters, { max: 3 });
    expect((await maxDigits.run(params, { text: 'call 123' } as never)).verdict).toBe(true);
    expect(await maxDigits.run(params, { text: 'call 1234' } as never)).toMatchObject({ verdict: false, data: { digits: 4 } });
    const bad = v.safeParse(maxDigits.parameters, { max: 1.5 });
    expect(bad.success).toBe(false);
    expect(bad.issues![0].message).toBe('max must be a whole number');
  });

  test('the plugins are plain objects with a name and their declarations', () => {
    expect(acmeChecks().name).toBe('acme-checks');
    expect(acmeChecks().errorCodes).toEqual({ acme_too_many_digits: { status: 446, type: 'guardrail_error' } });
    expect(acmeProvider({ baseURL: 'http://127.0.0.1:9000/v1' }).name).toBe('acme');
    expect(Object.keys(acmeProvider().targetFields!)).toEqual(['acme_region']);
    expect(() => acmeProvider({ baseURL: 'not a url' })).toThrow(/Invalid options for acme: baseURL: baseURL must be a URL/);
    expect(() => acmeProvider({ defaultRegion: 'mars' as never })).toThrow(/Invalid options for acme: defaultRegion: defaultRegion must be eu or us/);
  });
});

describe('both examples through a gateway, against the mock OpenAI upstream', () => {
  let mock: MockUpstream;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    mock = await startMockOpenAI();
    server = await startAcmeGateway(mock.baseURL, 0);
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await mock.close();
  });

  const send = (guardrail: Record<string, unknown>, content: string, extra: Record<string, unknown> = {}, target: Record<string, unknown> = {}) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-config': JSON.stringify({ provider: 'acme', api_key: 'sk-acme', ...target, input_guardrails: [{ id: 'digits', deny: true, ...guardrail }] }),
      },
      body: JSON.stringify({ model: 'acme-1', messages: [{ role: 'user', content }], ...extra }),
    });

  test('a text within the limit reaches the Acme server with its key; the answer carries hook_results', async () => {
    const res = await send({ 'acme.maxDigits': { max: 3 } }, 'Hello');
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.choices[0].message.content).toBe('Hello from the mock!');
    expect(body.hook_results.before_request_hooks[0]).toMatchObject({ id: 'digits', verdict: true, checks: [{ id: 'acme.maxDigits', data: { digits: 0 } }] });
    const seen = mock.requests.at(-1)!;
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe('Bearer sk-acme');
    expect(seen.headers['x-acme-region']).toBe('eu');
    // Signed in prepare, over the bytes actually sent.
    expect(seen.headers['x-acme-signature']).toBe(createHmac('sha256', 'sk-acme').update(seen.body).digest('hex'));
    expect(JSON.parse(seen.body).model).toBe('acme-1');
  });

  test('acme_region is a config field of its own: accepted, sent, and checked', async () => {
    const res = await send({ 'acme.maxDigits': { max: 3 } }, 'Hello', {}, { acme_region: 'us' });
    expect(res.status).toBe(200);
    expect(mock.requests.at(-1)!.headers['x-acme-region']).toBe('us');
    const bad = await send({ 'acme.maxDigits': { max: 3 } }, 'Hello', {}, { acme_region: 'mars' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ message: 'Invalid config: acme_region: must be eu or us (got "mars")', param: 'x-gateway-config' });
  });

  test('too many digits: 446, and the Acme server never sees the request', async () => {
    const before = mock.requests.length;
    const res = await send({ 'acme.maxDigits': { max: 3 } }, 'My account is 12345678');
    expect(res.status).toBe(446);
    const body = await res.json();
    expect(body.error.message).toBe('Denied by hook "digits" (check acme.maxDigits): The text holds 8 digits; at most 3 are allowed.');
    expect(body.error).toMatchObject({ code: 'acme_too_many_digits', type: 'guardrail_error' });
    expect(mock.requests.length).toBe(before);
  });

  test('bad parameters: a 400 naming the path, with the check\'s own message', async () => {
    const res = await send({ 'acme.maxDigits': { max: 1.5 } }, 'Hello');
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toBe('Invalid config: input_guardrails[0].acme.maxDigits.max: max must be a whole number.');
  });

  test('next to a bundled check, and on a stream through the Acme provider', async () => {
    const res = await send({ 'acme.maxDigits': { max: 3 }, 'default.wordCount': { max: 10 } }, 'Hi there', { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).toContain('"content":"Hello"');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
  });
});
