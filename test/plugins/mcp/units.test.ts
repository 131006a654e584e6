import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { readJsonRpc } from '../../../sdk/index.js';
import { argumentText, resultText } from '../../../plugins/mcp/judge.js';
import { relayEvents, type RelayedMessage } from '../../../plugins/mcp/events.js';

async function collect(stream: Readable): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += String(chunk);
  return out;
}

/** An upstream stream fed by hand, in whatever pieces the test chooses. */
function source(): { stream: Readable; push(text: string): void; end(): void } {
  const stream = new Readable({ read() {} });
  return { stream, push: (t) => stream.push(Buffer.from(t)), end: () => stream.push(null) };
}

const answerOf = (id: number) => (m: RelayedMessage) => m.id === id && ('result' in m || 'error' in m);

describe('the MCP event relay', () => {
  test('events are relayed message by message, however the bytes are cut; ids are dropped, names, retry and keep-alives kept', async () => {
    const up = source();
    const seen: Array<[string, boolean]> = [];
    const out = relayEvents(up.stream, {
      isAnswer: answerOf(1),
      onMessage: (m, answer) => {
        seen.push([String(m.method ?? 'answer'), answer]);
        return m;
      },
      deadline: null,
      onFailure: () => null,
      maxEventBytes: 1 << 20,
    });
    const text = collect(out);
    up.push('id: 7\r\nevent: message\r\nretry: 500\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress",');
    up.push('"params":{"progress":1}}\r\n\r\n: keep-alive\n\n');
    up.push('id: 8\ndata: {"jsonrpc":"2.0","id":1,\ndata: "result":{"ok":true}}\n\ndata: not json\n\n');
    up.end();
    expect(await text).toBe(
      'event: message\nretry: 500\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n' +
        ':\n\n' +
        'data: {"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n\n' +
        'data: not json\n\n',
    );
    expect(seen).toEqual([
      ['notifications/progress', false],
      ['answer', true],
    ]);
  });

  test('the answer can be rewritten or dropped before it goes out (async checks wait, progress does not)', async () => {
    const up = source();
    const out = relayEvents(up.stream, {
      isAnswer: answerOf(2),
      onMessage: async (m, answer) => {
        if (!answer) return m.method === 'drop/me' ? null : m;
        await new Promise((r) => setTimeout(r, 10));
        return { jsonrpc: '2.0', id: 2, error: { code: -32000, message: 'withheld' } };
      },
      deadline: null,
      onFailure: () => null,
      maxEventBytes: 1 << 20,
    });
    const text = collect(out);
    up.push('data: {"jsonrpc":"2.0","method":"drop/me"}\n\ndata: {"jsonrpc":"2.0","id":2,"result":{"secret":1}}\n\n');
    up.end();
    expect(await text).toBe('data: {"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"withheld"}}\n\n');
  });

  test('no answer by the deadline: the failure message is sent, the upstream released', async () => {
    const up = source();
    const out = relayEvents(up.stream, {
      isAnswer: answerOf(3),
      onMessage: (m) => m,
      deadline: performance.now() + 50,
      onFailure: (kind) => ({ jsonrpc: '2.0', id: 3, error: { code: -32001, message: kind } }),
      maxEventBytes: 1 << 20,
    });
    up.push('data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n');
    const text = await collect(out);
    expect(text).toBe('data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\ndata: {"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"timeout"}}\n\n');
    expect(up.stream.destroyed).toBe(true);
  });

  test('a stream that ends or breaks off before its answer gets the failure message; one after the answer ends quietly', async () => {
    const ended = source();
    const failure = (kind: string) => ({ jsonrpc: '2.0', id: 4, error: { code: -32603, message: kind } });
    const opts = { isAnswer: answerOf(4), onMessage: (m: RelayedMessage) => m, deadline: null, onFailure: failure, maxEventBytes: 1 << 20 };
    const a = collect(relayEvents(ended.stream, opts));
    ended.end();
    expect(await a).toBe('data: {"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"ended"}}\n\n');
    const broken = source();
    const b = collect(relayEvents(broken.stream, opts));
    broken.stream.destroy(new Error('reset'));
    expect(await b).toContain('"message":"ended"');
    const answered = source();
    const c = collect(relayEvents(answered.stream, opts));
    answered.push('data: {"jsonrpc":"2.0","id":4,"result":{}}\n\n');
    await new Promise((r) => setTimeout(r, 20));
    answered.stream.destroy(new Error('reset'));
    expect(await c).toBe('data: {"jsonrpc":"2.0","id":4,"result":{}}\n\n');
  });

  test('an event that outgrows the bound (a line that never ends) closes the stream with the failure message', async () => {
    const up = source();
    const out = relayEvents(up.stream, {
      isAnswer: answerOf(6),
      onMessage: (m) => m,
      deadline: null,
      onFailure: (kind) => ({ jsonrpc: '2.0', id: 6, error: { code: -32603, message: kind } }),
      maxEventBytes: 100,
    });
    const text = collect(out);
    up.push(`data: ${'x'.repeat(60)}`);
    up.push('x'.repeat(60));
    expect(await text).toBe('data: {"jsonrpc":"2.0","id":6,"error":{"code":-32603,"message":"oversized"}}\n\n');
    expect(up.stream.destroyed).toBe(true);
  });

  test('a client that leaves releases the upstream stream at once', async () => {
    const up = source();
    const out = relayEvents(up.stream, { isAnswer: answerOf(5), onMessage: (m) => m, deadline: null, onFailure: () => null, maxEventBytes: 1 << 20 });
    out.resume();
    out.destroy();
    await new Promise((r) => setImmediate(r));
    expect(up.stream.destroyed).toBe(true);
  });
});

describe('what guardrail checks read of a tool call', () => {
  test('arguments: their string values, one per line, nested ones included', () => {
    expect(argumentText({ q: 'find this', opts: { lang: 'en', n: 3, tags: ['a', { deep: 'b' }] } })).toBe('find this\nen\na\nb');
    expect(argumentText(undefined)).toBe('');
  });

  test('results: the text blocks and embedded text resources, else the structured content', () => {
    expect(resultText({ content: [{ type: 'text', text: 'one' }, { type: 'image', data: 'xx' }, { type: 'resource', resource: { uri: 'a', text: 'two' } }] })).toBe('one\ntwo');
    expect(resultText({ content: [], structuredContent: { email: 'a@b.c' } })).toBe('{"email":"a@b.c"}');
  });
});

describe('JSON-RPC messages', () => {
  test('requests, notifications and responses are told apart; anything else is refused with the code JSON-RPC gives it', () => {
    const read = (v: unknown) => readJsonRpc(Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)), 100);
    expect(read({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).kind).toBe('request');
    expect(read({ jsonrpc: '2.0', method: 'notifications/initialized' }).kind).toBe('notification');
    expect(read({ jsonrpc: '2.0', id: 'a', result: {} }).kind).toBe('response');
    const code = (v: unknown) => {
      try {
        read(v);
        return null;
      } catch (err) {
        return (err as { code: number }).code;
      }
    };
    expect(code('{')).toBe(-32700);
    expect(code([{ jsonrpc: '2.0', id: 1, method: 'x' }])).toBe(-32600);
    expect(code({ jsonrpc: '1.0', id: 1, method: 'x' })).toBe(-32600);
    expect(code({ jsonrpc: '2.0', id: { no: 1 }, method: 'x' })).toBe(-32600);
    expect(code({ jsonrpc: '2.0', id: 1, method: 'x', params: 'text' })).toBe(-32600);
    expect(code({ jsonrpc: '2.0', id: 1 })).toBe(-32600);
    expect(code(`{"jsonrpc":"2.0","id":1,"method":"x","params":${'['.repeat(200)}${']'.repeat(200)}}`)).toBe(-32600);
  });
});
