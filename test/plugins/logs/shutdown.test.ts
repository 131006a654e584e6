import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startProcess } from '../../helpers/process.js';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startMockOpenAI, type MockUpstream } from '../../mocks/openai-upstream.js';
import { openSqlite, tempFile } from './helpers.js';

let mock: MockUpstream;
beforeAll(async () => {
  mock = await startMockOpenAI({ record: false });
});
afterAll(() => mock.close());

const KEY = 'shutdown-logs-key-1';

function startEntry(file: string): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/plugins/logs/fixtures/gateway-entry.ts', file, KEY], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway entry did not start: ${out}`));
    }, 20_000);
    child.stdout!.on('data', () => {
      const m = /gateway listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ port: Number(m[1]), exited, output: () => out, kill: (s) => child.kill(s) });
      }
    });
    void exited.then((code) => reject(new Error(`gateway entry exited early (${code}): ${out}`)));
  });
}

type Started = { port: number; exited: Promise<number | null>; output: () => string; kill: (s: NodeJS.Signals) => void };

test('SIGTERM during load: every answered request has its log entry in the SQLite file, none twice', async () => {
  const file = await tempFile('shutdown.db');
  await loadThenSigterm(await startEntry(file), file, 'gateway closed');
}, 60_000);

test('the real server (server/main.ts, the default config: its log writer thread) under load and SIGTERM loses no entry either', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'gw-real-shutdown-'));
  const p = await startProcess([], { GATEWAY_API_KEYS: KEY, GATEWAY_DATA_DIR: dataDir });
  const gw: Started = { port: p.port, exited: p.exited, output: p.output, kill: (s) => p.child.kill(s) };
  await loadThenSigterm(gw, join(dataDir, 'gateway.db'), null);
}, 60_000);

async function loadThenSigterm(gw: Started, file: string, closedMessage: string | null) {
  const dispatcher = new Agent({ connections: 24 });
  const answered = new Set<string>();
  const sent = new Set<string>();
  let n = 0;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const id = `sigterm-${n++}`;
      sent.add(id);
      const headers = { 'x-gateway-api-key': KEY, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.baseURL, authorization: 'Bearer sk-x', 'x-gateway-trace-id': id };
      const kind = n % 4;
      try {
        const res =
          kind === 3
            ? await fetch(`http://127.0.0.1:${gw.port}/v1/models`, { headers, dispatcher } as RequestInit)
            : await fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
                method: 'POST',
                headers: { ...headers, 'content-type': 'application/json' },
                // Some slow answers, so requests are in flight when the signal comes.
                body: JSON.stringify({ model: kind === 0 ? 'slow-300' : 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: kind === 2 }),
                dispatcher,
              } as RequestInit);
        const body = await res.text();
        if (res.status === 200 && (kind !== 2 || body.trimEnd().endsWith('[DONE]'))) answered.add(id);
      } catch {
        return; // the gateway stopped accepting
      }
    }
  };
  const workers = Array.from({ length: 24 }, worker);
  // Let the load run until a few hundred requests were answered, then signal.
  const until = Date.now() + 15_000;
  while (answered.size < 300 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  gw.kill('SIGTERM');
  const code = await gw.exited;
  stop = true;
  await Promise.all(workers);
  await dispatcher.close();
  expect(code, gw.output()).toBe(0);
  if (closedMessage !== null) expect(gw.output()).toContain(closedMessage);
  expect(answered.size).toBeGreaterThanOrEqual(300);

  const db = openSqlite(file);
  try {
    const rows = db.prepare("SELECT trace_id FROM gateway_logs WHERE trace_id LIKE 'sigterm-%'").all() as { trace_id: string }[];
    const stored = new Set(rows.map((r) => r.trace_id));
    expect(stored.size).toBe(rows.length); // none twice
    const lost = [...answered].filter((id) => !stored.has(id));
    expect(lost, gw.output()).toEqual([]);
    for (const id of stored) expect(sent.has(id)).toBe(true);
  } finally {
    db.close();
  }
}
