import { expect, test } from 'vitest';
import type { LogEntry } from '../../../../plugins/logs/entry.js';
import { packEntries, unpackEntries } from '../../../../plugins/logs/thread/pack.js';
import { NUMBER_FIELDS, openSqlite, sampleEntry, tempFile } from '../helpers.js';
import { migrateLogFile, threadSink, withBodies } from './sink-helpers.js';

/** What crosses to the thread: a structured clone, as postMessage makes it. */
const roundTrip = (entries: LogEntry[]) => unpackEntries(structuredClone(packEntries(entries, entries.map((_, i) => 1000 + i))));


/** Every field with a value no other field has (strings by name, numbers counted up, booleans alternating). */
function distinctEntry(seed: number): LogEntry {
  const base = sampleEntry();
  const e: Record<string, unknown> = {};
  let n = seed * 1000;
  let flip = seed % 2 === 0;
  for (const [key, value] of Object.entries(base)) {
    if (NUMBER_FIELDS.has(key)) e[key] = ++n + 0.25;
    else if (typeof value === 'string' || value === null) e[key] = `${key}-${seed}`;
    else if (typeof value === 'number') e[key] = ++n + 0.25;
    else if (typeof value === 'boolean') e[key] = flip = !flip;
    else e[key] = value;
  }
  e.attempts = [
    { target: `t${seed}`, provider: 'openai', status: 500, startMs: 1.5, latencyMs: 2.5, error: 'upstream_error' },
    { target: `u${seed}`, provider: null, status: null, startMs: 3.25, latencyMs: 0.5, error: null, via: 'chat.completions' },
  ];
  e.metadata = { user: `u${seed}`, n: seed };
  e.hook_results = { before: [{ id: `h${seed}`, verdict: true }] };
  e.request_headers = null;
  e.received_headers = { host: `h${seed}`, 'x-list': ['a', 'b'] as unknown as string };
  return e as unknown as LogEntry;
}

test('every field survives packing, each in its own place (a field left out or read out of order fails)', () => {
  const entries = [distinctEntry(1), distinctEntry(2), distinctEntry(3)];
  // Every field of LogEntry is set to something other than sampleEntry's default, so none can pass by chance.
  expect(Object.keys(entries[0]!).sort()).toEqual(Object.keys(sampleEntry()).sort());
  const back = roundTrip(entries);
  expect(back).toHaveLength(3);
  for (let i = 0; i < 3; i++) {
    const { received_headers, ...rest } = entries[i]!;
    const { received_headers: headers, ...restBack } = back[i]!;
    expect(restBack).toEqual(rest);
    // Several values of one header arrive joined, as the log stores them.
    expect({ ...headers }).toEqual({ host: `h${i + 1}`, 'x-list': 'a, b' });
  }
});

test('nulls, empty texts, zeros and text outside Latin-1 come back as they were', () => {
  const e = sampleEntry({
    trace_id: null,
    error_message: '',
    request_body: '{"q":"héllo ✓ 你好 🎉"}',
    response_body: 'a\u0000b',
    latency_ms: 0,
    cost: null,
    prompt_version: null,
    received_headers: null,
  });
  const [back] = roundTrip([e]);
  expect(back).toEqual(e);
  expect(roundTrip([])).toEqual([]);
});

test('attempts of another shape cross as they are; many headers and attempts outgrow the first estimate', () => {
  const odd = [{ target: '0', provider: 'mcp', status: 200, startMs: 1, latencyMs: 2, error: null, server: 'srv_1' }] as unknown as LogEntry['attempts'];
  // The core's fields, but a status that is not a number: kept as it is, not turned into one.
  const typed = [{ target: '0', provider: 'a2a', status: 'ok', startMs: 1, latencyMs: 2, error: null }] as unknown as LogEntry['attempts'];
  const many = Array.from({ length: 40 }, (_, i) => ({ target: String(i), provider: 'openai', status: 502, startMs: i, latencyMs: i + 0.5, error: 'upstream_error' }));
  const headers = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-h-${i}`, `value ${i} ${'v'.repeat(i)}`]));
  const entries = [sampleEntry({ attempts: odd }), sampleEntry({ attempts: many, received_headers: headers }), sampleEntry({ attempts: [] }), sampleEntry({ received_headers: headers }), sampleEntry({ attempts: typed })];
  const back = roundTrip(entries);
  expect(back.map((e) => e.attempts)).toEqual(entries.map((e) => e.attempts));
  expect(back[0]!.attempts).not.toBe(odd);
  expect({ ...back[1]!.received_headers }).toEqual(headers);
  expect({ ...back[3]!.received_headers }).toEqual(headers);
  expect(back.map((e) => e.id)).toEqual(entries.map((e) => e.id));
});

test('a header named __proto__ stays a plain header, and does not change the object', () => {
  const headers = JSON.parse('{"__proto__":"x","accept":"*/*"}') as Record<string, string>;
  const [back] = roundTrip([sampleEntry({ received_headers: headers })]);
  expect(Object.keys(back!.received_headers!)).toEqual(['__proto__', 'accept']);
  expect(Object.getPrototypeOf(back!.received_headers)).toBeNull();
});

test('an entry whose hook results cannot be cloned reaches the store in its JSON form', async () => {
  const file = await tempFile('uncloneable.db');
  await migrateLogFile(file);
  const s = threadSink(file, undefined, { finish: { capture: 'truncated', captureBytes: 1024, scanLimit: 4096 }, flushIntervalMs: 10 });
  await s.open();
  s.start();
  s.push(sampleEntry({ trace_id: 'fn', hook_results: { check: 'ok', fn: () => 1 } }), 1000);
  s.push(sampleEntry({ trace_id: 'plain' }), 1000);
  await s.flush();
  expect(s.stats()).toMatchObject({ written: 2, writeErrors: 0 });
  const db = openSqlite(file);
  try {
    const rows = (db.prepare('SELECT trace_id, body_ref FROM gateway_logs ORDER BY trace_id').all() as Record<string, unknown>[]).map((r) => withBodies(file, r)) as unknown as { trace_id: string; hook_results: string | null; request_body: string }[];
    expect(rows.map((r) => r.trace_id)).toEqual(['fn', 'plain']);
    expect(JSON.parse(rows[0]!.hook_results!)).toEqual({ check: 'ok' });
    expect(rows[0]!.request_body).toBe(sampleEntry().request_body);
  } finally {
    db.close();
  }
  await s.close(1000);
}, 30_000);
