import { Readable } from 'node:stream';
import { afterAll, describe, expect, test } from 'vitest';
import { createGateway, GatewayError, isBodySource, readResponseBody, type BodyObserver, type GatewayResponse } from '../../../core/index.js';
import { chatBody } from '../../../plugins/prompts/body.js';
import { checkTemplate, compilePrompt, formatValue, renderPrompt } from '../../../plugins/prompts/engine.js';
import { envelope, wantsEnvelope } from '../../../plugins/prompts/envelope.js';
import { prompts } from '../../../plugins/prompts/index.js';
import { parsePromptRef, type PartialRelease, type PromptRelease } from '../../../sdk/index.js';
import { memoryLogger } from '../../helpers/gateway.js';

// A gateway with the plugin registers its error codes (missing_variables).
const gateway = createGateway({ plugins: [prompts()], logger: memoryLogger().logger });
afterAll(() => gateway.close(0));

function release(content: string | Record<string, unknown>[], extra: Partial<PromptRelease> = {}): PromptRelease {
  return {
    id: 'pp-test',
    slug: 'test',
    name: 'Test',
    workspaceId: 'ws',
    version: 1,
    latestVersion: 1,
    publishedVersion: 1,
    template: { model: 'm', messages: [{ role: 'user', content }] },
    selection: { provider: '@p' },
    variables: {},
    partials: new Map(),
    ...extra,
  };
}
const partial = (name: string, content: string, version = 1): PartialRelease => ({ id: `ppt-${name}`, name, version, content, partials: [] });

const render = (r: PromptRelease, variables: Record<string, unknown>, max = 1_000_000) => {
  const out = renderPrompt(compilePrompt(r), r.template, variables, max);
  return (out.messages as Record<string, unknown>[])[0]!.content;
};
const errorOf = (fn: () => unknown): GatewayError => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
};

describe('prompt references', () => {
  test.each([
    ['welcome', { ref: 'welcome', selector: 'published' }],
    ['pp-abc@latest', { ref: 'pp-abc', selector: 'latest' }],
    ['welcome@12', { ref: 'welcome', selector: 12 }],
  ])('%s', (raw, parsed) => expect(parsePromptRef(raw)).toEqual(parsed));

  test.each(['', '@latest', 'x@', 'x@0', 'x@01', 'x@-1', 'x@1.5', 'x@LATEST', 'x@99999999999'])('%j is not a reference', (raw) => {
    expect(parsePromptRef(raw)).toBeNull();
  });
});

describe('rendering', () => {
  test('values go in as text: strings unchanged (no HTML escaping), numbers and booleans as written, objects as JSON', () => {
    expect(render(release('{{a}}|{{{a}}}|{{&a}}|{{n}}|{{b}}|{{o}}|{{{o}}}|{{nil}}|'), { a: '<a href="x">&\'', n: 1.5, b: false, o: { k: [1] }, nil: null })).toBe(
      '<a href="x">&\'|<a href="x">&\'|<a href="x">&\'|1.5|false|{"k":[1]}|{"k":[1]}||',
    );
    expect(formatValue([1, 'a'])).toBe('[1,"a"]');
  });

  test('dotted names, sections over lists and objects, inverted sections', () => {
    const r = release('{{user.name}}:{{#tags}}[{{.}}]{{/tags}}{{#user}}<{{role}}>{{/user}}{{^tags}}none{{/tags}}{{^empty}}!{{/empty}}');
    expect(render(r, { user: { name: 'Ann', role: 'admin' }, tags: ['a', 'b'], empty: [] })).toBe('Ann:[a][b]<admin>!');
    expect(render(r, { user: { name: 'Bo' }, tags: [] })).toBe('Bo:<>none!');
  });

  test('a value with Mustache syntax is never expanded, even one naming a partial or another variable', () => {
    const r = release('{{a}}', { partials: new Map([['p', partial('p', 'PARTIAL')]]) });
    const withPartial = release('{{a}} {{> p}}', { partials: new Map([['p', partial('p', 'PARTIAL')]]) });
    expect(render(r, { a: '{{b}} {{> p}} {{#b}}x{{/b}}', b: 'B' })).toBe('{{b}} {{> p}} {{#b}}x{{/b}}');
    expect(render(withPartial, { a: '{{> p}}' })).toBe('{{> p}} PARTIAL');
  });

  test("the prototype is not a variable: {{constructor}} or {{toString}} name only the caller's own keys", () => {
    const r = release('[{{#constructor}}x{{/constructor}}][{{toString}}][{{a.constructor}}]');
    expect(render(r, { toString: 'mine', a: {} })).toBe('[][mine][]');
    expect(errorOf(() => render(release('{{constructor}}'), {})).code).toBe('missing_variables');
  });

  test('required: names outside sections without a default; a default fills in; an explicit null counts as sent', () => {
    const r = release('{{a}} {{b.c}} {{#s}}{{inner}}{{/s}} {{^t}}{{d}}{{/t}}', { variables: { b: { default: { c: 'B' } } } });
    const error = errorOf(() => render(r, {}));
    expect(error).toMatchObject({ code: 'missing_variables', status: 400, param: 'variables' });
    expect(error.message).toContain('"a", "d"');
    expect(render(r, { a: 'A', d: null })).toBe('A B  ');
    expect(render(r, { a: 'A', d: 'D', b: { c: 'over' } })).toBe('A over  D');
  });

  test('partials render in the current context, nested; text parts and other fields are kept', () => {
    const r = release([{ type: 'text', text: '{{#people}}{{> line}}{{/people}}' }, { type: 'image_url', image_url: { url: 'https://x/{{a}}' } }], {
      partials: new Map([
        ['line', partial('line', '- {{name}} {{> mark}}\n')],
        ['mark', partial('mark', '({{role}})')],
      ]),
    });
    const out = render(r, { people: [{ name: 'A', role: 'x' }, { name: 'B', role: 'y' }] }) as Record<string, unknown>[];
    expect(out[0]).toEqual({ type: 'text', text: '- A (x)\n- B (y)\n' });
    expect(out[1]).toEqual({ type: 'image_url', image_url: { url: 'https://x/{{a}}' } });
    // The saved template is not changed by a rendering.
    expect((r.template.messages as any)[0].content[0].text).toBe('{{#people}}{{> line}}{{/people}}');
  });

  test('a partial the workspace no longer has, or partials that include one another, cannot render', () => {
    expect(errorOf(() => compilePrompt(release('{{> gone}}', { partials: new Map([['gone', null]]) }))).message).toContain('"gone"');
    const cycle = release('{{> a}}', { partials: new Map([['a', partial('a', '{{> b}}')], ['b', partial('b', '{{#x}}{{> a}}{{/x}}')]]) });
    expect(errorOf(() => compilePrompt(cycle)).message).toContain('a → b → a');
  });

  test('a rendering longer than the limit is refused before it grows further', () => {
    const r = release('{{#a}}{{#a}}{{#a}}{{x}}{{/a}}{{/a}}{{/a}}');
    const a = Array.from({ length: 100 }, () => 1);
    const error = errorOf(() => render(r, { a, x: 'y'.repeat(100) }, 50_000));
    expect(error).toMatchObject({ status: 400, param: 'variables' });
    expect(error.message).toContain('50000');
    expect((render(r, { a: [1, 2], x: 'ab' }, 16) as string).length).toBe(16);
  });

  test('templates are checked: syntax errors and the partials they include', () => {
    expect(checkTemplate('Hi {{name}} {{> a}} {{#s}}{{> b}}{{/s}} {{> a}}')).toEqual({ error: null, partials: ['a', 'b'] });
    expect(checkTemplate('{{#open}}').error).toMatch(/Unclosed section "open"/);
    expect(checkTemplate('{{/x}}').error).toMatch(/Unopened section "x"/);
    expect(checkTemplate('{{name').error).toMatch(/Unclosed tag/);
  });
});

describe('the chat body of a prompt completion', () => {
  const rendered = { model: 'm', temperature: 0.1, max_completion_tokens: 10, messages: [{ role: 'system', content: 's' }] };

  test('root fields override, variables are dropped, messages are appended', () => {
    const body = chatBody(rendered, JSON.parse('{"variables":{"a":1},"temperature":0.7,"stream":true,"messages":[{"role":"user","content":"u"}],"__proto__":{"polluted":true}}'));
    expect(body).toEqual({ model: 'm', temperature: 0.7, max_completion_tokens: 10, stream: true, messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] });
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(rendered.messages).toHaveLength(1);
  });

  test('either completion bound in the request replaces the template one', () => {
    expect(chatBody(rendered, { max_tokens: 5 })).toEqual({ model: 'm', temperature: 0.1, max_tokens: 5, messages: rendered.messages });
    expect(chatBody({ ...rendered, max_tokens: 3, max_completion_tokens: undefined }, { max_completion_tokens: 4 })).toMatchObject({ max_completion_tokens: 4 });
    expect(chatBody({ ...rendered, max_tokens: 3 }, { max_completion_tokens: 4 })).not.toHaveProperty('max_tokens');
  });

  test('messages that are not an array are a 400', () => {
    expect(errorOf(() => chatBody(rendered, { messages: 'hi' })).param).toBe('messages');
  });
});

describe('the envelope', () => {
  const seen = () => {
    const chunks: Buffer[] = [];
    const ends: (Error | null)[] = [];
    const observer: BodyObserver = { onChunk: (c) => chunks.push(c), onEnd: (e) => ends.push(e) };
    return { observer, text: () => Buffer.concat(chunks).toString(), ends };
  };
  const answer = (body: GatewayResponse['body'], observers: BodyObserver[] | null, headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': '9', 'x-request-id': 'r1' }): GatewayResponse => ({
    status: 200,
    headers,
    body,
    observers,
  });

  test('a buffered answer: wrapped, framing headers dropped; the observers saw the chat completion only', async () => {
    const o = seen();
    const wrapped = envelope(answer(Buffer.from('{"id":"c"}'), [o.observer]));
    expect(JSON.parse((await readResponseBody(wrapped.body)).toString())).toEqual({ status: 'success', headers: { 'content-type': 'application/json', 'x-request-id': 'r1' }, body: { id: 'c' } });
    expect(wrapped.headers['content-length']).toBeUndefined();
    expect(o.text()).toBe('{"id":"c"}');
    expect(o.ends).toEqual([null]);
  });

  test('a streamed answer stays streamed, and its observers see its own bytes', async () => {
    const o = seen();
    const wrapped = envelope(answer(Readable.from([Buffer.from('{"id":'), Buffer.from('"c"}')]), [o.observer]));
    expect(isBodySource(wrapped.body)).toBe(true);
    expect(JSON.parse((await readResponseBody(wrapped.body)).toString()).body).toEqual({ id: 'c' });
    expect(o.text()).toBe('{"id":"c"}');
    expect(o.ends).toEqual([null]);
  });

  test('a stream that breaks off: the error reaches the reader and the observers', async () => {
    const o = seen();
    const broken = new Readable({
      read() {
        this.push(Buffer.from('{"id":'));
        this.destroy(new Error('reset'));
      },
    });
    const wrapped = envelope(answer(broken, [o.observer]));
    await expect(readResponseBody(wrapped.body)).rejects.toThrow('reset');
    expect(o.ends).toHaveLength(1);
    expect(o.ends[0]?.message).toBe('reset');
  });

  test('only successful JSON answers get it', () => {
    expect(wantsEnvelope(answer(Buffer.from('{}'), null))).toBe(true);
    expect(wantsEnvelope({ ...answer(Buffer.from('{}'), null), status: 400 })).toBe(false);
    expect(wantsEnvelope(answer(Buffer.from('data: x'), null, { 'content-type': 'text/event-stream' }))).toBe(false);
    expect(wantsEnvelope(answer(Buffer.from('x'), null, { 'content-type': 'application/json', 'content-encoding': 'gzip' }))).toBe(false);
  });
});
